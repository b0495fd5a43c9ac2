//! The topology terms decisions are expressed in: the [`Level`] two CPUs share
//! (the same CPU, SMT siblings, one LLC, one node, another node, the way the sched
//! domains nest above a CPU) and the [`Unit`]s tasks are counted in (CPUs, cores,
//! LLCs, nodes), with one value per level ([`PerLevel`]) or per unit ([`PerUnit`]).

use super::frac;
use crate::machine::{Machine, SharedLevel};
use serde::Serialize;

/// The closest topology level two CPUs share, with nodes (not packages) as the
/// outer unit, since NUMA placement is what the domains above the LLC decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Same,
    Smt,
    Llc,
    /// Same node, another LLC.
    Node,
    /// Another node.
    Remote,
}

impl Level {
    pub const ALL: [Level; 5] = [
        Level::Same,
        Level::Smt,
        Level::Llc,
        Level::Node,
        Level::Remote,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Level::Same => "same",
            Level::Smt => "smt",
            Level::Llc => "llc",
            Level::Node => "node",
            Level::Remote => "remote",
        }
    }

    /// The level between CPUs `a` and `b` of `m`; `None` when either is not a CPU
    /// of `m`.
    pub fn between(m: &Machine, a: usize, b: usize) -> Option<Level> {
        let (x, y) = (m.cpus.get(a)?, m.cpus.get(b)?);
        Some(match m.shared_level(a, b) {
            SharedLevel::Same => Level::Same,
            SharedLevel::Smt => Level::Smt,
            SharedLevel::Llc => Level::Llc,
            SharedLevel::Package | SharedLevel::Numa if x.node == y.node => Level::Node,
            SharedLevel::Package | SharedLevel::Numa => Level::Remote,
        })
    }
}

/// One value per [`Level`], serialised in level order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerLevel<T> {
    pub same: T,
    pub smt: T,
    pub llc: T,
    pub node: T,
    pub remote: T,
}

impl<T: Copy> PerLevel<T> {
    pub fn get(&self, l: Level) -> T {
        match l {
            Level::Same => self.same,
            Level::Smt => self.smt,
            Level::Llc => self.llc,
            Level::Node => self.node,
            Level::Remote => self.remote,
        }
    }
    pub(super) fn get_mut(&mut self, l: Level) -> &mut T {
        match l {
            Level::Same => &mut self.same,
            Level::Smt => &mut self.smt,
            Level::Llc => &mut self.llc,
            Level::Node => &mut self.node,
            Level::Remote => &mut self.remote,
        }
    }
}

impl PerLevel<u64> {
    pub fn total(&self) -> u64 {
        Level::ALL.iter().map(|&l| self.get(l)).sum()
    }
    /// Counts as fractions of their sum (all 0 when the sum is 0).
    pub fn fractions(&self) -> PerLevel<f64> {
        let n = self.total();
        let mut f = PerLevel::default();
        for l in Level::ALL {
            *f.get_mut(l) = frac(self.get(l), n);
        }
        f
    }
}

/// The units tasks are counted in: CPUs, cores, LLCs, nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Cpu,
    Core,
    Llc,
    Node,
}

impl Unit {
    pub const ALL: [Unit; 4] = [Unit::Cpu, Unit::Core, Unit::Llc, Unit::Node];

    pub fn name(self) -> &'static str {
        match self {
            Unit::Cpu => "cpu",
            Unit::Core => "core",
            Unit::Llc => "llc",
            Unit::Node => "node",
        }
    }

    /// The unit of this kind holding `cpu`.
    pub(super) fn of(self, m: &Machine, cpu: usize) -> usize {
        let c = &m.cpus[cpu];
        match self {
            Unit::Cpu => cpu,
            Unit::Core => c.core,
            Unit::Llc => c.llc,
            Unit::Node => c.node,
        }
    }
}

/// One value per [`Unit`], serialised in unit order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PerUnit<T> {
    pub cpu: T,
    pub core: T,
    pub llc: T,
    pub node: T,
}

impl<T: Copy> PerUnit<T> {
    pub fn get(&self, u: Unit) -> T {
        *self.at(u)
    }
}

impl<T> PerUnit<T> {
    pub(super) fn at(&self, u: Unit) -> &T {
        match u {
            Unit::Cpu => &self.cpu,
            Unit::Core => &self.core,
            Unit::Llc => &self.llc,
            Unit::Node => &self.node,
        }
    }
    pub(super) fn get_mut(&mut self, u: Unit) -> &mut T {
        match u {
            Unit::Cpu => &mut self.cpu,
            Unit::Core => &mut self.core,
            Unit::Llc => &mut self.llc,
            Unit::Node => &mut self.node,
        }
    }
}
