//! The CFS timeline: the ordered set of a runqueue's queued entities.
//!
//! **What the kernel keeps.** Each `cfs_rq` holds its runnable entities, except the
//! running one, in `tasks_timeline`, an `rb_root_cached`: a red-black tree plus a
//! pointer to its leftmost node, so that the entity with the smallest vruntime is read
//! in O(1) (`__pick_first_entity`, `rb_first_cached`) while insertion and removal stay
//! O(log n). The order is `entity_before(a, b)`: `a` sorts first when the signed
//! difference `(s64)(a->vruntime - b->vruntime)` is negative. The difference, not the
//! raw `u64`, is what makes the order survive wrap-around: `init_cfs_rq` starts
//! `min_vruntime` at `-(1 << 20)`, so every runqueue crosses `u64::MAX → 0` within its
//! first millisecond of virtual time. `__enqueue_entity` descends to the left only
//! when the new entity is strictly before the node, so an entity queued with the same
//! vruntime as others goes after them: FIFO among equal keys. `__pick_next_entity` is
//! the in-order successor (`rb_next`), used by the v5.6 skip-buddy test.
//!
//! **The v6.6 augmentation.** EEVDF picks, among the *eligible* entities (lag ≥ 0,
//! `entity_eligible`), the one with the earliest virtual deadline. v6.6 keeps the tree
//! ordered by vruntime and augments every node with `min_deadline`, the earliest
//! deadline in its subtree (`RB_DECLARE_CALLBACKS` with `min_deadline_update`), so
//! `__pick_eevdf` can find the answer in one walk down instead of a scan. (v6.8 later
//! sorted the tree by deadline and augmented it with `min_vruntime`; that is not
//! modelled.)
//!
//! **This model.** A height-balanced (AVL) binary search tree with the same order, the
//! same tie rule, the cached leftmost and the same `min_deadline` augmentation. Nodes
//! live in an arena (`Vec<Node>`, `u32` links, a free list, cleared whenever the tree
//! empties so a small runqueue's nodes stay in a few adjacent slots); the parent link
//! gives `rb_next`'s successor walk. The kernel finds an entity's node through the
//! `run_node` embedded in its `sched_entity`; entities here are named by pid, so the
//! tree keeps a pid → node index (an open-addressing table sized to the runqueue, not to
//! the pid space). AVL rather than red-black: the same ordering and the same O(log n)
//! bounds, with a simpler deletion; the shapes differ, and no answer here depends on
//! the shape (see the pick below).
//!
//! Why a tree: the previous model, a sorted vector, paid an O(n) memmove per enqueue.
//! With 100 000 tasks on 8 CPUs (12 500 per runqueue) that memmove was 76 % of all
//! instructions (docs/PERFORMANCE.md, "The CFS timeline as a tree").
//!
//! **Two forms.** Most runqueues hold 0–3 entities, and there nothing beats a short
//! sorted array: a binary search and a memmove of a few dozen bytes cost less than a
//! tree's descent, rebalancing and pid index. So a [`Timeline`] is that vector (in
//! descending order, the leftmost last, so picking it pops) up to [`SMALL_MAX`] (128)
//! entities and becomes the tree at the next insertion; a tree that shrinks below
//! [`SMALL_MIN`] (32) becomes a vector again (the gap keeps a runqueue near a bound
//! from switching at every operation). Both forms hold the same order and give the
//! same answers to every question (the tests run each case in both and across the
//! switch); the form is invisible outside this file. Measured in instructions per
//! insert + pick + remove against the old vector: +10 % at 2 entries, +2 % at 8,
//! −3 % at 100, 9× fewer at 10 000 (docs/PERFORMANCE.md).
//!
//! **The pick.** For a fixed runqueue state, eligibility is `avg ≥ key·load` with `key`
//! the entity's vruntime relative to `min_vruntime`: monotone in vruntime, so the
//! eligible entities are a prefix of the timeline. [`Timeline::earliest_eligible`]
//! walks down once: at an eligible node, its left subtree and the node itself lie
//! wholly inside the prefix (they are collected, in timeline order) and the walk goes
//! right; at an ineligible node it goes left. Among the collected pieces the earliest
//! deadline wins, an equal deadline never displacing an earlier piece; a winning
//! subtree is then descended to its leftmost node holding that deadline. So the answer
//! is the leftmost entity with the earliest deadline in the eligible prefix: exactly
//! what a scan of the prefix in vruntime order returns, whatever the tree's shape. The
//! kernel's `__pick_eevdf` breaks equal deadlines by the shape instead (eevdf.rs).
//!
//! A node holds copies of its entity's vruntime, weight and deadline, taken at
//! insertion, as the kernel's tree holds the values it was sorted and augmented with:
//! the kernel dequeues and re-enqueues an entity around any change of them
//! (`reweight_entity`, the running entity is outside the tree). Here a queued
//! entity's vruntime and deadline change only while it runs (not in the tree) or is
//! off the runqueue; `--check` compares the copies with the entities
//! (`Kernel::check_invariants`).
//!
//! Wrap-around: keys are compared pairwise by wrapping signed difference, as
//! `entity_before` does; this is a total order as long as the live vruntimes (and
//! deadlines) of one runqueue span less than 2^63 ns of virtual time, i.e. always in
//! practice (they span seconds).

use crate::sched::fair::entity::vdiff;

/// The null link.
const NIL: u32 = u32::MAX;

/// One queued entity and its subtree's summary.
#[derive(Clone, Copy, Debug)]
struct Node {
    vruntime: u64,
    deadline: u64,
    /// The earliest deadline (by signed difference) in this node's subtree.
    min_deadline: u64,
    pid: u32,
    weight: u32,
    left: u32,
    right: u32,
    parent: u32,
    /// AVL height: a leaf is 1, the null link 0.
    height: u32,
}

/// One queued entity as the iterators hand it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub pid: u32,
    pub vruntime: u64,
    pub weight: u32,
    pub deadline: u64,
}

/// `a` is an earlier deadline than `b` (wrapping signed difference).
#[inline]
fn earlier(a: u64, b: u64) -> bool {
    vdiff(b, a) > 0
}

/// The earlier of two deadlines; `a` on a tie (the values are then equal).
#[inline]
fn min_deadline(a: u64, b: u64) -> u64 {
    if earlier(b, a) {
        b
    } else {
        a
    }
}

/// The tree form of the timeline (`rb_root_cached` with the v6.6 `min_deadline`
/// augmentation). Ordered by vruntime (signed difference), FIFO among equal
/// vruntimes.
#[derive(Clone, Debug)]
struct Tree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    /// The cached leftmost node (`rb_leftmost`).
    leftmost: u32,
    len: u32,
    index: PidIndex,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            leftmost: NIL,
            len: 0,
            index: PidIndex::default(),
        }
    }
}

impl Tree {
    fn len(&self) -> usize {
        self.len as usize
    }

    /// Empty the tree, giving its memory back.
    fn clear(&mut self) {
        *self = Tree::default();
    }

    #[inline]
    fn height(&self, x: u32) -> u32 {
        if x == NIL {
            0
        } else {
            self.nodes[x as usize].height
        }
    }

    /// Recompute `x`'s height and `min_deadline` from its children.
    #[inline]
    fn pull(&mut self, x: u32) {
        let n = self.nodes[x as usize];
        let mut h = 0;
        let mut m = n.deadline;
        if n.left != NIL {
            let l = &self.nodes[n.left as usize];
            h = l.height;
            m = min_deadline(l.min_deadline, m);
        }
        if n.right != NIL {
            let r = &self.nodes[n.right as usize];
            h = h.max(r.height);
            m = min_deadline(m, r.min_deadline);
        }
        let n = &mut self.nodes[x as usize];
        n.height = h + 1;
        n.min_deadline = m;
    }

    /// Make `new` take `old`'s place under `parent` (or as the root).
    #[inline]
    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if self.nodes[parent as usize].left == old {
            self.nodes[parent as usize].left = new;
        } else {
            self.nodes[parent as usize].right = new;
        }
    }

    /// Rotate `x` down to the left; returns the subtree's new root (`x`'s right child).
    fn rotate_left(&mut self, x: u32) -> u32 {
        let y = self.nodes[x as usize].right;
        let b = self.nodes[y as usize].left;
        let p = self.nodes[x as usize].parent;
        self.nodes[x as usize].right = b;
        if b != NIL {
            self.nodes[b as usize].parent = x;
        }
        self.nodes[y as usize].left = x;
        self.nodes[x as usize].parent = y;
        self.nodes[y as usize].parent = p;
        self.replace_child(p, x, y);
        self.pull(x);
        self.pull(y);
        y
    }

    /// Rotate `x` down to the right; returns the subtree's new root (`x`'s left child).
    fn rotate_right(&mut self, x: u32) -> u32 {
        let y = self.nodes[x as usize].left;
        let b = self.nodes[y as usize].right;
        let p = self.nodes[x as usize].parent;
        self.nodes[x as usize].left = b;
        if b != NIL {
            self.nodes[b as usize].parent = x;
        }
        self.nodes[y as usize].right = x;
        self.nodes[x as usize].parent = y;
        self.nodes[y as usize].parent = p;
        self.replace_child(p, x, y);
        self.pull(x);
        self.pull(y);
        y
    }

    /// Walk from `x` to the root restoring heights, balance and `min_deadline`;
    /// stops where a node's summary did not change (its ancestors' cannot have).
    fn fix_up(&mut self, mut x: u32) {
        while x != NIL {
            let n = self.nodes[x as usize];
            let (hl, hr) = (self.height(n.left), self.height(n.right));
            if hl > hr + 1 {
                let l = n.left;
                let ln = self.nodes[l as usize];
                if self.height(ln.right) > self.height(ln.left) {
                    self.rotate_left(l);
                }
                x = self.rotate_right(x);
            } else if hr > hl + 1 {
                let r = n.right;
                let rn = self.nodes[r as usize];
                if self.height(rn.left) > self.height(rn.right) {
                    self.rotate_right(r);
                }
                x = self.rotate_left(x);
            } else {
                self.pull(x);
                let m = &self.nodes[x as usize];
                if m.height == n.height && m.min_deadline == n.min_deadline {
                    return;
                }
            }
            x = self.nodes[x as usize].parent;
        }
    }

    fn leftmost_of(&self, mut x: u32) -> u32 {
        loop {
            let l = self.nodes[x as usize].left;
            if l == NIL {
                return x;
            }
            x = l;
        }
    }

    /// The in-order successor of node `x` (`rb_next`), or NIL.
    fn successor(&self, x: u32) -> u32 {
        let r = self.nodes[x as usize].right;
        if r != NIL {
            return self.leftmost_of(r);
        }
        let mut c = x;
        let mut p = self.nodes[x as usize].parent;
        while p != NIL && self.nodes[p as usize].right == c {
            c = p;
            p = self.nodes[p as usize].parent;
        }
        p
    }

    /// `__enqueue_entity`: insert `pid` after every entity whose vruntime is not
    /// after `vruntime`. `pid` must not be queued already.
    fn insert(&mut self, pid: u32, vruntime: u64, weight: u32, deadline: u64) {
        let node = Node {
            vruntime,
            deadline,
            min_deadline: deadline,
            pid,
            weight,
            left: NIL,
            right: NIL,
            parent: NIL,
            height: 1,
        };
        let x = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.index.insert(pid, x);
        self.len += 1;
        if self.root == NIL {
            self.root = x;
            self.leftmost = x;
            return;
        }
        let mut p = self.root;
        let mut leftmost = true;
        loop {
            let pn = &self.nodes[p as usize];
            // Left only when the node is strictly after the new key
            // (`entity_before(se, entry)`): equal keys go right, after their peers.
            let go_left = vdiff(pn.vruntime, vruntime) > 0;
            let next = if go_left { pn.left } else { pn.right };
            if next == NIL {
                if go_left {
                    self.nodes[p as usize].left = x;
                } else {
                    self.nodes[p as usize].right = x;
                    leftmost = false;
                }
                break;
            }
            leftmost &= go_left;
            p = next;
        }
        self.nodes[x as usize].parent = p;
        if leftmost {
            self.leftmost = x;
        }
        self.fix_up(p);
    }

    /// `__dequeue_entity`: remove `pid`; returns its (vruntime, weight), or `None` if
    /// it was not queued.
    fn remove(&mut self, pid: u32) -> Option<(u64, u32)> {
        let z = self.index.remove(pid)?;
        let zn = self.nodes[z as usize];
        let out = (zn.vruntime, zn.weight);
        self.len -= 1;
        if self.len == 0 {
            self.nodes.clear();
            self.free.clear();
            self.root = NIL;
            self.leftmost = NIL;
            return Some(out);
        }
        if z == self.leftmost {
            // The leftmost has no left child: it is unlinked itself, not replaced.
            self.leftmost = self.successor(z);
        }
        // With two children, `z` takes its successor's entity and the successor's
        // node (which has no left child) is unlinked instead.
        let y = if zn.left != NIL && zn.right != NIL {
            let y = self.leftmost_of(zn.right);
            let yn = self.nodes[y as usize];
            let zm = &mut self.nodes[z as usize];
            zm.vruntime = yn.vruntime;
            zm.deadline = yn.deadline;
            zm.pid = yn.pid;
            zm.weight = yn.weight;
            self.index.set(yn.pid, z);
            y
        } else {
            z
        };
        let yn = self.nodes[y as usize];
        let c = if yn.left != NIL { yn.left } else { yn.right };
        if c != NIL {
            self.nodes[c as usize].parent = yn.parent;
        }
        self.replace_child(yn.parent, y, c);
        self.free.push(y);
        self.fix_up(yn.parent);
        if y != z {
            // `z`'s own deadline changed: its summary and its ancestors'.
            self.fix_up(z);
        }
        Some(out)
    }

    /// `__pick_first_entity`: the leftmost pid.
    #[inline]
    fn first(&self) -> Option<u32> {
        (self.leftmost != NIL).then(|| self.nodes[self.leftmost as usize].pid)
    }

    /// The leftmost pid and its stored vruntime.
    fn first_entry(&self) -> Option<(u32, u64)> {
        (self.leftmost != NIL).then(|| {
            let n = &self.nodes[self.leftmost as usize];
            (n.pid, n.vruntime)
        })
    }

    /// `__pick_next_entity`: the pid after `pid` in timeline order (`None` for the
    /// last, or when `pid` is not queued).
    fn next_after(&self, pid: u32) -> Option<u32> {
        let x = self.index.get(pid)?;
        let s = self.successor(x);
        (s != NIL).then(|| self.nodes[s as usize].pid)
    }

    /// The queued entities in timeline order, leftmost first.
    fn iter(&self) -> TreeIter<'_> {
        TreeIter {
            t: self,
            x: self.leftmost,
        }
    }

    /// The leftmost entity with the earliest deadline among the eligible prefix of
    /// the timeline, as (pid, deadline). `eligible(vruntime)` must hold for a prefix
    /// of the timeline and fail after it (true of `entity_eligible` for a fixed
    /// runqueue state). `None` when no entity is eligible.
    fn earliest_eligible(&self, eligible: impl Fn(u64) -> bool) -> Option<(u32, u64)> {
        // The best piece so far: (node, deadline, whole subtree?).
        let mut best: Option<(u32, u64, bool)> = None;
        let mut x = self.root;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if eligible(n.vruntime) {
                // The left subtree precedes `x`, which precedes the right subtree:
                // pieces are met in timeline order, and only a strictly earlier
                // deadline displaces the best.
                if n.left != NIL {
                    let d = self.nodes[n.left as usize].min_deadline;
                    if best.is_none_or(|(_, bd, _)| earlier(d, bd)) {
                        best = Some((n.left, d, true));
                    }
                }
                if best.is_none_or(|(_, bd, _)| earlier(n.deadline, bd)) {
                    best = Some((x, n.deadline, false));
                }
                x = n.right;
            } else {
                x = n.left;
            }
        }
        let (mut y, d, subtree) = best?;
        if subtree {
            // The leftmost node of `y`'s subtree holding its minimum `d`.
            loop {
                let n = &self.nodes[y as usize];
                if n.left != NIL && self.nodes[n.left as usize].min_deadline == d {
                    y = n.left;
                } else if n.deadline == d {
                    break;
                } else {
                    y = n.right;
                }
            }
        }
        Some((self.nodes[y as usize].pid, d))
    }

    /// Verify the tree: links, order, balance, heights, `min_deadline` against a
    /// brute-force minimum, the cached leftmost, the pid index and the arena's count.
    fn check(&self) -> Result<(), String> {
        if self.root == NIL {
            if self.len != 0 || self.leftmost != NIL || self.index.len != 0 {
                return Err(format!(
                    "timeline: empty tree but len {} leftmost {} index {}",
                    self.len, self.leftmost, self.index.len
                ));
            }
            return Ok(());
        }
        if self.nodes[self.root as usize].parent != NIL {
            return Err("timeline: root has a parent".into());
        }
        let mut count = 0u32;
        self.check_subtree(self.root, &mut count)?;
        if count != self.len || self.index.len != self.len {
            return Err(format!(
                "timeline: {count} nodes reachable, len {}, index {}",
                self.len, self.index.len
            ));
        }
        if count as usize + self.free.len() != self.nodes.len() {
            return Err(format!(
                "timeline: {count} live + {} free != {} slots",
                self.free.len(),
                self.nodes.len()
            ));
        }
        if self.leftmost != self.leftmost_of(self.root) {
            return Err("timeline: cached leftmost is not the leftmost node".into());
        }
        let mut prev: Option<u64> = None;
        for e in self.iter() {
            if let Some(p) = prev {
                if vdiff(p, e.vruntime) > 0 {
                    return Err(format!(
                        "timeline: vruntime {} after {p} (pid {})",
                        e.vruntime, e.pid
                    ));
                }
            }
            prev = Some(e.vruntime);
            let x = self.index.get(e.pid);
            if x.map(|x| self.nodes[x as usize].pid) != Some(e.pid) {
                return Err(format!("timeline: index of pid {} is {x:?}", e.pid));
            }
        }
        Ok(())
    }

    /// Checks `x`'s subtree; returns (height, brute-force min deadline).
    fn check_subtree(&self, x: u32, count: &mut u32) -> Result<(u32, u64), String> {
        *count += 1;
        if *count > self.len {
            return Err("timeline: more nodes reachable than queued (a cycle?)".into());
        }
        let n = &self.nodes[x as usize];
        let mut m = n.deadline;
        let mut hs = [0u32; 2];
        for (i, c) in [n.left, n.right].into_iter().enumerate() {
            if c == NIL {
                continue;
            }
            if self.nodes[c as usize].parent != x {
                return Err(format!("timeline: node {c}'s parent is not {x}"));
            }
            let (h, cm) = self.check_subtree(c, count)?;
            hs[i] = h;
            if earlier(cm, m) {
                m = cm;
            }
        }
        let h = hs[0].max(hs[1]) + 1;
        if hs[0].abs_diff(hs[1]) > 1 {
            return Err(format!("timeline: node {x} unbalanced {hs:?}"));
        }
        if h != n.height {
            return Err(format!("timeline: node {x} height {} != {h}", n.height));
        }
        if m != n.min_deadline {
            return Err(format!(
                "timeline: node {x} min_deadline {} != {m}",
                n.min_deadline
            ));
        }
        Ok((h, m))
    }
}

/// The tree in order (successor walk from the cached leftmost).
struct TreeIter<'a> {
    t: &'a Tree,
    x: u32,
}

impl Iterator for TreeIter<'_> {
    type Item = Entry;
    #[inline]
    fn next(&mut self) -> Option<Entry> {
        if self.x == NIL {
            return None;
        }
        let n = &self.t.nodes[self.x as usize];
        let e = Entry {
            pid: n.pid,
            vruntime: n.vruntime,
            weight: n.weight,
            deadline: n.deadline,
        };
        self.x = self.t.successor(self.x);
        Some(e)
    }
}

/// Up to this many entities a timeline is a sorted vector; one more makes it a tree.
pub const SMALL_MAX: u32 = 128;
/// A tree that falls below this many entities becomes a vector again.
pub const SMALL_MIN: u32 = 32;

/// A runqueue's queued entities in timeline order: a sorted vector while small, the
/// augmented tree above [`SMALL_MAX`] entities (back below [`SMALL_MIN`]). Ordered by
/// vruntime (signed difference), FIFO among equal vruntimes, in either form.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The vector form: entries in *descending* order, the leftmost last (picking it
    /// pops). Empty while the tree is in use.
    small: Vec<Entry>,
    /// The tree form; empty while the vector is in use.
    tree: Tree,
    in_tree: bool,
    small_max: u32,
    small_min: u32,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            small: Vec::new(),
            tree: Tree::default(),
            in_tree: false,
            small_max: SMALL_MAX,
            small_min: SMALL_MIN,
        }
    }
}

impl Timeline {
    /// A timeline with other switch-over sizes (tests: `(0, 0)` is always a tree).
    #[cfg(test)]
    fn with_thresholds(small_max: u32, small_min: u32) -> Timeline {
        assert!(small_min <= small_max);
        Timeline {
            small_max,
            small_min,
            ..Timeline::default()
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        if self.in_tree {
            self.tree.len()
        } else {
            self.small.len()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `__enqueue_entity`: insert `pid` after every entity whose vruntime is not
    /// after `vruntime`. `pid` must not be queued already.
    #[inline]
    pub fn insert(&mut self, pid: u32, vruntime: u64, weight: u32, deadline: u64) {
        if !self.in_tree {
            if self.small.len() < self.small_max as usize {
                // Descending: the entries strictly after the new key come first.
                let pos = self
                    .small
                    .partition_point(|e| vdiff(e.vruntime, vruntime) > 0);
                self.small.insert(
                    pos,
                    Entry {
                        pid,
                        vruntime,
                        weight,
                        deadline,
                    },
                );
                return;
            }
            self.become_tree();
        }
        self.tree.insert(pid, vruntime, weight, deadline);
    }

    /// The vector becomes the tree, leftmost first: each entry goes right of its
    /// equals, so the order is kept.
    #[cold]
    #[inline(never)]
    fn become_tree(&mut self) {
        for e in self.small.iter().rev() {
            self.tree.insert(e.pid, e.vruntime, e.weight, e.deadline);
        }
        self.small = Vec::new();
        self.in_tree = true;
    }

    /// The tree becomes the vector (descending).
    #[cold]
    #[inline(never)]
    fn become_vector(&mut self) {
        self.small.extend(self.tree.iter());
        self.small.reverse();
        self.tree.clear();
        self.in_tree = false;
    }

    /// `__dequeue_entity`: remove `pid`; returns its (vruntime, weight), or `None` if
    /// it was not queued.
    #[inline]
    pub fn remove(&mut self, pid: u32) -> Option<(u64, u32)> {
        if !self.in_tree {
            // From the leftmost end: the entity is usually near it.
            let i = self.small.iter().rposition(|e| e.pid == pid)?;
            let e = self.small.remove(i);
            return Some((e.vruntime, e.weight));
        }
        let out = self.tree.remove(pid)?;
        if self.tree.len() < self.small_min as usize {
            self.become_vector();
        }
        Some(out)
    }

    /// `__pick_first_entity`: the leftmost pid.
    #[inline]
    pub fn first(&self) -> Option<u32> {
        if self.in_tree {
            self.tree.first()
        } else {
            self.small.last().map(|e| e.pid)
        }
    }

    /// The leftmost pid and its vruntime as stored at insertion (equal to the
    /// entity's own: a queued entity's vruntime only changes off the timeline).
    /// Reading the copy spares the cache miss on the leftmost task itself, which
    /// `update_curr` pays at every call on a runqueue of many tasks.
    #[inline]
    pub fn first_entry(&self) -> Option<(u32, u64)> {
        if self.in_tree {
            self.tree.first_entry()
        } else {
            self.small.last().map(|e| (e.pid, e.vruntime))
        }
    }

    /// `__pick_next_entity`: the pid after `pid` in timeline order (`None` for the
    /// last, or when `pid` is not queued).
    pub fn next_after(&self, pid: u32) -> Option<u32> {
        if self.in_tree {
            return self.tree.next_after(pid);
        }
        let i = self.small.iter().rposition(|e| e.pid == pid)?;
        i.checked_sub(1).map(|j| self.small[j].pid)
    }

    /// The queued entities in timeline order, leftmost first.
    pub fn iter(&self) -> Iter<'_> {
        Iter(if self.in_tree {
            IterForm::Tree(self.tree.iter())
        } else {
            IterForm::Small(self.small.iter().rev())
        })
    }

    /// The leftmost entity with the earliest deadline among the eligible prefix of
    /// the timeline, as (pid, deadline). `eligible(vruntime)` must hold for a prefix
    /// of the timeline and fail after it (true of `entity_eligible` for a fixed
    /// runqueue state). `None` when no entity is eligible.
    pub fn earliest_eligible(&self, eligible: impl Fn(u64) -> bool) -> Option<(u32, u64)> {
        if self.in_tree {
            return self.tree.earliest_eligible(eligible);
        }
        // The vector: scan the prefix, only a strictly earlier deadline displacing
        // the best (the tree's walk gives the same).
        let mut best: Option<(u32, u64)> = None;
        for e in self.small.iter().rev() {
            if !eligible(e.vruntime) {
                break;
            }
            if best.is_none_or(|(_, bd)| earlier(e.deadline, bd)) {
                best = Some((e.pid, e.deadline));
            }
        }
        best
    }

    /// Verify the timeline: the vector's order, or the tree's invariants (links,
    /// order, balance, heights, `min_deadline` against a brute-force minimum, the
    /// cached leftmost, the pid index, the arena's count).
    pub fn check(&self) -> Result<(), String> {
        if self.in_tree {
            if !self.small.is_empty() {
                return Err("timeline: tree in use but the vector holds entries".into());
            }
            return self.tree.check();
        }
        if self.tree.len() != 0 || self.small.len() > self.small_max as usize {
            return Err(format!(
                "timeline: vector of {} (at most {}) with {} in the tree",
                self.small.len(),
                self.small_max,
                self.tree.len()
            ));
        }
        for w in self.small.windows(2) {
            // Descending storage: each entry not before the next.
            if vdiff(w[1].vruntime, w[0].vruntime) > 0 {
                return Err(format!(
                    "timeline: vruntime {} (pid {}) stored before {} (pid {})",
                    w[1].vruntime, w[1].pid, w[0].vruntime, w[0].pid
                ));
            }
        }
        Ok(())
    }
}

/// The timeline in order, leftmost first.
pub struct Iter<'a>(IterForm<'a>);

enum IterForm<'a> {
    Small(std::iter::Rev<std::slice::Iter<'a, Entry>>),
    Tree(TreeIter<'a>),
}

impl Iterator for Iter<'_> {
    type Item = Entry;
    #[inline]
    fn next(&mut self) -> Option<Entry> {
        match &mut self.0 {
            IterForm::Small(it) => it.next().copied(),
            IterForm::Tree(it) => it.next(),
        }
    }
}

/// pid → node, open addressing with linear probing (Fibonacci hashing of the pid,
/// backward-shift deletion), at most half full. Never iterated, so its layout cannot
/// reach a decision.
#[derive(Clone, Debug, Default)]
struct PidIndex {
    /// (pid, node); `pid == EMPTY` marks a free slot.
    slots: Vec<(u32, u32)>,
    len: u32,
    /// 32 − log2(slots.len()).
    shift: u32,
}

const EMPTY: u32 = u32::MAX;

impl PidIndex {
    #[inline]
    fn home(&self, pid: u32) -> usize {
        (pid.wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot holding `pid`.
    #[inline]
    fn find(&self, pid: u32) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mut i = self.home(pid);
        loop {
            let (p, _) = self.slots[i];
            if p == pid {
                return Some(i);
            }
            if p == EMPTY {
                return None;
            }
            i = (i + 1) & self.mask();
        }
    }

    fn get(&self, pid: u32) -> Option<u32> {
        self.find(pid).map(|i| self.slots[i].1)
    }

    /// Point the present `pid` at `node`.
    fn set(&mut self, pid: u32, node: u32) {
        let i = self.find(pid).expect("timeline index: pid not present");
        self.slots[i].1 = node;
    }

    fn grow(&mut self) {
        let cap = (self.slots.len() * 2).max(8);
        let old = std::mem::replace(&mut self.slots, vec![(EMPTY, 0); cap]);
        self.shift = 32 - cap.trailing_zeros();
        for (p, n) in old {
            if p != EMPTY {
                self.place(p, n);
            }
        }
    }

    #[inline]
    fn place(&mut self, pid: u32, node: u32) {
        let mut i = self.home(pid);
        while self.slots[i].0 != EMPTY {
            debug_assert_ne!(self.slots[i].0, pid, "pid {pid} queued twice");
            i = (i + 1) & self.mask();
        }
        self.slots[i] = (pid, node);
    }

    fn insert(&mut self, pid: u32, node: u32) {
        assert_ne!(pid, EMPTY, "timeline: pid {EMPTY} is reserved");
        if (self.len as usize + 1) * 2 > self.slots.len() {
            self.grow();
        }
        self.place(pid, node);
        self.len += 1;
    }

    fn remove(&mut self, pid: u32) -> Option<u32> {
        let mut i = self.find(pid)?;
        let node = self.slots[i].1;
        self.len -= 1;
        // Backward shift: pull later entries of the probe run into the hole unless
        // their home lies cyclically in (hole, their slot].
        let mask = self.mask();
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let (p, _) = self.slots[j];
            if p == EMPTY {
                break;
            }
            let h = self.home(p);
            let stays = if i <= j {
                i < h && h <= j
            } else {
                i < h || h <= j
            };
            if !stays {
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.slots[i].0 = EMPTY;
        Some(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pids(t: &Timeline) -> Vec<u32> {
        t.iter().map(|e| e.pid).collect()
    }

    fn checked(t: &Timeline) {
        if let Err(e) = t.check() {
            panic!("{e}");
        }
    }

    /// The same timeline as a vector (production sizes), always a tree, and
    /// switching form at 3 entries and back at 2.
    fn forms() -> [Timeline; 3] {
        [
            Timeline::default(),
            Timeline::with_thresholds(0, 0),
            Timeline::with_thresholds(3, 2),
        ]
    }

    #[test]
    fn equal_vruntimes_are_fifo() {
        for t in forms() {
            equal_vruntimes_are_fifo_in(t);
        }
    }

    fn equal_vruntimes_are_fifo_in(mut t: Timeline) {
        for pid in [5, 3, 9, 1] {
            t.insert(pid, 100, 1024, 0);
            checked(&t);
        }
        t.insert(7, 99, 1024, 0);
        t.insert(8, 101, 1024, 0);
        assert_eq!(pids(&t), vec![7, 5, 3, 9, 1, 8]);
        // A re-queued entity goes behind its equals.
        t.remove(5);
        t.insert(5, 100, 1024, 0);
        checked(&t);
        assert_eq!(pids(&t), vec![7, 3, 9, 1, 5, 8]);
    }

    #[test]
    fn order_survives_the_wrap() {
        for t in forms() {
            order_survives_the_wrap_in(t);
        }
    }

    fn order_survives_the_wrap_in(mut t: Timeline) {
        // min_vruntime starts at -(1 << 20): keys on both sides of u64::MAX -> 0.
        let base = (-(1i64 << 20)) as u64;
        t.insert(1, 5, 1024, 0); // past the wrap: after everything below
        t.insert(2, u64::MAX, 1024, 0);
        t.insert(3, base, 1024, 0);
        t.insert(4, 0, 1024, 0);
        t.insert(5, u64::MAX - 1, 1024, 0);
        t.insert(6, 0, 1024, 0);
        checked(&t);
        assert_eq!(pids(&t), vec![3, 5, 2, 4, 6, 1]);
        assert_eq!(t.first(), Some(3));
        assert_eq!(t.next_after(2), Some(4));
        assert_eq!(t.next_after(6), Some(1));
        assert_eq!(t.next_after(1), None);
        assert_eq!(t.next_after(42), None);
    }

    #[test]
    fn leftmost_follows_removals() {
        for t in forms() {
            leftmost_follows_removals_in(t);
        }
    }

    fn leftmost_follows_removals_in(mut t: Timeline) {
        for (pid, v) in [(1, 10), (2, 20), (3, 30), (4, 40), (5, 5)] {
            t.insert(pid, v, 1024, 0);
        }
        assert_eq!(t.first(), Some(5));
        assert_eq!(t.remove(5), Some((5, 1024)));
        checked(&t);
        assert_eq!(t.first(), Some(1));
        // Removing an inner node (two children) keeps the order and the leftmost.
        t.remove(2);
        checked(&t);
        assert_eq!(pids(&t), vec![1, 3, 4]);
        assert_eq!(t.first(), Some(1));
        assert_eq!(t.remove(1), Some((10, 1024)));
        assert_eq!(t.first(), Some(3));
        assert_eq!(t.remove(9), None);
        t.remove(3);
        t.remove(4);
        checked(&t);
        assert_eq!((t.first(), t.len()), (None, 0));
        // Empty again: the arena restarts.
        t.insert(6, 1, 1024, 0);
        assert_eq!(t.first(), Some(6));
        assert!(t.tree.nodes.len() <= 1);
    }

    #[test]
    fn next_after_walks_the_order() {
        for t in forms() {
            next_after_walks_the_order_in(t);
        }
    }

    fn next_after_walks_the_order_in(mut t: Timeline) {
        // A sequence that forces rotations both ways.
        let vs = [50u64, 20, 80, 10, 30, 70, 90, 25, 27, 26, 85, 95, 99];
        for (i, &v) in vs.iter().enumerate() {
            t.insert(i as u32, v, 1, 0);
            checked(&t);
        }
        let mut order: Vec<(u64, u32)> =
            vs.iter().enumerate().map(|(i, &v)| (v, i as u32)).collect();
        order.sort();
        let want: Vec<u32> = order.iter().map(|&(_, p)| p).collect();
        let mut got = vec![t.first().unwrap()];
        while let Some(n) = t.next_after(*got.last().unwrap()) {
            got.push(n);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn earliest_eligible_deadline_leftmost_on_ties() {
        for t in forms() {
            earliest_eligible_in(t);
        }
    }

    fn earliest_eligible_in(mut t: Timeline) {
        // (pid, vruntime, deadline)
        for (p, v, d) in [
            (1, 10, 500),
            (2, 20, 300),
            (3, 30, 300),
            (4, 40, 100),
            (5, 50, 200),
        ] {
            t.insert(p, v, 1024, d);
        }
        checked(&t);
        // Everything up to vruntime 30 eligible: 2 and 3 tie at 300, the leftmost wins.
        assert_eq!(t.earliest_eligible(|v| v <= 30), Some((2, 300)));
        // Up to 40: pid 4's 100.
        assert_eq!(t.earliest_eligible(|v| v <= 45), Some((4, 100)));
        assert_eq!(t.earliest_eligible(|v| v <= 10), Some((1, 500)));
        assert_eq!(t.earliest_eligible(|_| false), None);
        // Deadlines across the wrap: u64::MAX is earlier than 5.
        t.insert(6, 60, 1024, u64::MAX);
        t.insert(7, 70, 1024, 5);
        checked(&t);
        assert_eq!(t.earliest_eligible(|_| true), Some((6, u64::MAX)));
    }

    #[test]
    fn pid_index_survives_collisions_and_shifts() {
        let mut ix = PidIndex::default();
        // Multiples of a power of two all hash near each other under a small table.
        let ps: Vec<u32> = (0..200).map(|i| i * 64).collect();
        for (n, &p) in ps.iter().enumerate() {
            ix.insert(p, n as u32);
        }
        for (n, &p) in ps.iter().enumerate().step_by(3) {
            assert_eq!(ix.remove(p), Some(n as u32));
        }
        for (n, &p) in ps.iter().enumerate() {
            let want = (n % 3 != 0).then_some(n as u32);
            assert_eq!(ix.get(p), want, "pid {p}");
        }
        assert_eq!(ix.remove(1), None);
    }

    /// The production switch-over sizes: grow past SMALL_MAX into the tree, shrink
    /// below SMALL_MIN back to the vector, twice, against a sorted oracle, with many
    /// equal vruntimes; the pick across the whole range at each size.
    #[test]
    fn production_sizes_switch_form_and_keep_order() {
        let mut t = Timeline::default();
        let mut live: Vec<(u32, u64, u64)> = Vec::new();
        let base = (-(1i64 << 20)) as u64;
        let mut x: u64 = 12345;
        let mut rnd = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % m
        };
        let n = SMALL_MAX as usize + 40;
        for round in 0..2 {
            for pid in 0..n as u32 {
                let v = base.wrapping_add(rnd(64) * 1_000_000);
                let d = v.wrapping_add(rnd(8));
                t.insert(pid, v, 1024, d);
                live.push((pid, v, d));
                checked(&t);
            }
            assert!(t.in_tree, "round {round}: {} entries are a tree", n);
            while !live.is_empty() {
                let i = rnd(live.len() as u64) as usize;
                let (pid, v, _) = live.remove(i);
                assert_eq!(t.remove(pid), Some((v, 1024)));
                checked(&t);
                let mut s = live.clone();
                s.sort_by_key(|&(_, v, _)| vdiff(v, base));
                let got: Vec<(u32, u64, u64)> =
                    t.iter().map(|e| (e.pid, e.vruntime, e.deadline)).collect();
                assert_eq!(got, s);
                let limit = base.wrapping_add(rnd(64) * 1_000_000);
                let mut want: Option<(u32, u64)> = None;
                for &(p, _, d) in s.iter().take_while(|e| vdiff(e.1, limit) <= 0) {
                    if want.is_none_or(|(_, bd)| vdiff(bd, d) > 0) {
                        want = Some((p, d));
                    }
                }
                assert_eq!(t.earliest_eligible(|v| vdiff(v, limit) <= 0), want);
                if live.len() < SMALL_MIN as usize {
                    assert!(!t.in_tree, "{} entries are a vector again", live.len());
                }
            }
        }
    }

    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert { pid: u32, v: u64, d: u64 },
        Remove(u32),
        First,
        NextAfter(u32),
        Pick(u64),
    }

    /// Vruntimes and deadlines near 0, near the wrap, and anywhere in a window that
    /// straddles it (all within 2^40 of one another).
    fn around(base: u64) -> impl Strategy<Value = u64> {
        prop_oneof![
            (0u64..8).prop_map(move |k| base.wrapping_add(k)),
            (0u64..8).prop_map(move |k| base.wrapping_sub(k)),
            (0u64..1 << 40).prop_map(move |k| base.wrapping_add(k).wrapping_sub(1 << 39)),
        ]
    }

    fn op(base: u64) -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u32..40, around(base), around(base)).prop_map(|(pid, v, d)| Op::Insert { pid, v, d }),
            3 => (0u32..40).prop_map(Op::Remove),
            1 => Just(Op::First),
            1 => (0u32..40).prop_map(Op::NextAfter),
            2 => around(base).prop_map(Op::Pick),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Differential test against the plain model: a vector of (pid, v, d) kept in
        /// arrival order and sorted on demand (stable sort by signed distance from
        /// `base`: vruntime order, FIFO among equals). After every operation the
        /// timeline's invariants hold and its order is the oracle's. Random
        /// switch-over sizes, so both forms and the conversions are exercised.
        #[test]
        fn matches_a_sorted_vector(
            base in prop_oneof![Just(0u64), Just(u64::MAX), Just((-(1i64 << 20)) as u64), any::<u64>()],
            ops in prop::collection::vec(op(0), 1..300),
            (small_max, small_min) in (0u32..8).prop_flat_map(|m| (Just(m), 0..=m)),
        ) {
            let mut t = Timeline::with_thresholds(small_max, small_min);
            let mut live: Vec<(u32, u64, u64)> = Vec::new();
            let sorted = |live: &Vec<(u32, u64, u64)>| {
                let mut s = live.clone();
                s.sort_by_key(|&(_, v, _)| vdiff(v, base));
                s
            };
            for o in ops {
                // The ops were drawn around 0; move them to `base`.
                match o {
                    Op::Insert { pid, v, d } => {
                        let (v, d) = (v.wrapping_add(base), d.wrapping_add(base));
                        if live.iter().any(|e| e.0 == pid) {
                            continue;
                        }
                        t.insert(pid, v, pid + 1, d);
                        live.push((pid, v, d));
                    }
                    Op::Remove(pid) => {
                        let want = live.iter().position(|e| e.0 == pid).map(|i| live.remove(i));
                        prop_assert_eq!(t.remove(pid), want.map(|e| (e.1, pid + 1)));
                    }
                    Op::First => {
                        prop_assert_eq!(t.first(), sorted(&live).first().map(|e| e.0));
                    }
                    Op::NextAfter(pid) => {
                        let s = sorted(&live);
                        let want = s.iter().position(|e| e.0 == pid).and_then(|i| s.get(i + 1)).map(|e| e.0);
                        prop_assert_eq!(t.next_after(pid), want);
                    }
                    Op::Pick(limit) => {
                        // Eligible: vruntime not after `limit` (a prefix).
                        let limit = limit.wrapping_add(base);
                        let eligible = |v: u64| vdiff(v, limit) <= 0;
                        let mut want: Option<(u32, u64)> = None;
                        for (pid, v, d) in sorted(&live) {
                            if !eligible(v) {
                                break;
                            }
                            match want {
                                Some((_, bd)) if vdiff(bd, d) <= 0 => {}
                                _ => want = Some((pid, d)),
                            }
                        }
                        prop_assert_eq!(t.earliest_eligible(eligible), want);
                    }
                }
                if let Err(e) = t.check() {
                    return Err(TestCaseError::fail(e));
                }
                prop_assert_eq!(t.len(), live.len());
                let got: Vec<(u32, u64, u64)> =
                    t.iter().map(|e| (e.pid, e.vruntime, e.deadline)).collect();
                prop_assert_eq!(got, sorted(&live));
            }
        }
    }
}
