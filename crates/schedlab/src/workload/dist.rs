//! Random quantities of workloads: durations, counts and sizes drawn from small
//! distributions, and how scenario files write them.
//!
//! **Model.** A [`Dist`] yields non-negative integers (ns, a count, bytes). Samplers are
//! our own, on top of `RngStream::next_u64`/`RngStream::next_f64`, so a seed gives
//! the same draws whatever the `rand` crates do next:
//!
//! | dist | draws | sample |
//! |---|---|---|
//! | `Const(v)` | 0 | `v` |
//! | `Uniform { lo, hi }` | ≥ 1 | integer uniform in `[lo, hi]` (Lemire, unbiased) |
//! | `Exp { mean }` | 1 | `round(-mean · ln(1 - U))`, `U` uniform in `[0, 1)` (inverse CDF) |
//! | `Normal { mean, std }` | 2 | `round(mean + std · √(-2 ln(1-U1)) · cos(2π U2))` (Box–Muller, cosine branch only), clamped at 0 |
//!
//! Each normal sample spends exactly two draws (the sine twin is discarded) so a stream's
//! position never depends on earlier values. Clamping at 0 rather than re-drawing keeps
//! draws fixed too; [`Dist::mean`] reports the clamped mean. Floats appear only in the
//! sampler (this is workload input, not a kernel decision).
//!
//! **Syntax** (TOML): a bare value is a constant; a table names the law:
//! `500`, `"500us"`, `{ dist = "const", value = "1ms" }`, `{ dist = "exp", mean = "500us" }`,
//! `{ dist = "uniform", min = "1ms", max = "2ms" }`, `{ dist = "normal", mean = "1ms", std = "100us" }`.
//! For times an integer means ns and a string needs a unit (`ns`, `us`/`µs`, `ms`, `s`;
//! decimals allowed if the result is whole ns); a bare number in a string is rejected as
//! ambiguous. Counts are plain integers; byte sizes are integers or strings with `B`,
//! `KiB`, `MiB`, `GiB`. Unknown keys are errors naming the key.
//!
//! **Bounds.** Every value written is at most [`MAX_DIST_VALUE`] (10^15: a million
//! seconds of ns, a petabyte, 10^15 iterations), and every draw is clamped to it, so
//! a long tail of an exponential cannot carry a time past what the engine adds
//! without overflow (engine module docs).

use crate::engine::{RngStream, MAX_TIME_NS};

/// The largest value a distribution may be written with or draw: the engine's
/// [`MAX_TIME_NS`], for every unit.
pub const MAX_DIST_VALUE: u64 = MAX_TIME_NS;

/// A distribution of non-negative integers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Const(u64),
    /// Uniform on the integers `lo..=hi`.
    Uniform {
        lo: u64,
        hi: u64,
    },
    /// Exponential with the given mean, rounded to the nearest integer.
    Exp {
        mean: u64,
    },
    /// Normal, rounded to the nearest integer and clamped at 0.
    Normal {
        mean: u64,
        std: u64,
    },
}

impl Dist {
    /// One draw from `rng`.
    pub fn sample(&self, rng: &mut RngStream) -> u64 {
        match *self {
            Dist::Const(v) => v.min(MAX_DIST_VALUE),
            Dist::Uniform { lo, hi } => match hi.saturating_sub(lo).checked_add(1) {
                Some(n) => lo.saturating_add(rng.below(n)).min(MAX_DIST_VALUE),
                None => rng.next_u64().min(MAX_DIST_VALUE),
            },
            Dist::Exp { mean } => {
                let u = rng.next_f64();
                to_u64(-(mean as f64) * (1.0 - u).ln())
            }
            Dist::Normal { mean, std } => {
                let u1 = 1.0 - rng.next_f64(); // (0, 1]
                let u2 = rng.next_f64();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                to_u64(mean as f64 + std as f64 * z)
            }
        }
    }

    /// The mean of what [`Dist::sample`] returns (before rounding; for a normal, of the
    /// law clamped at 0).
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Const(v) => v as f64,
            Dist::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
            Dist::Exp { mean } => mean as f64,
            Dist::Normal { mean, std } => {
                if std == 0 {
                    return mean as f64;
                }
                let (m, s) = (mean as f64, std as f64);
                let a = m / s;
                // E[max(0, X)] = m·Φ(a) + s·φ(a)
                let phi = (-0.5 * a * a).exp() / (2.0 * std::f64::consts::PI).sqrt();
                let cdf = 0.5 * erfc(-a / std::f64::consts::SQRT_2);
                m * cdf + s * phi
            }
        }
    }
}

/// Round to the nearest integer, clamping to `[0, MAX_DIST_VALUE]`.
fn to_u64(x: f64) -> u64 {
    if x.is_nan() || x <= 0.0 {
        0
    } else {
        (x.round() as u64).min(MAX_DIST_VALUE) // `as` saturates
    }
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, |error| < 1.2e-7);
/// used only to report the mean of a clamped normal.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// What a distribution's values measure, which decides how they are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds: integers are ns, strings need a unit ("500us").
    Time,
    /// Plain integers.
    Count,
    /// Bytes: integers, or strings with B / KiB / MiB / GiB.
    Bytes,
}

/// Split `"1.5ms"` into a non-negative decimal number and its suffix, and scale it by
/// the suffix's multiplier from `units`, insisting on a whole result.
fn parse_scaled(s: &str, what: &str, units: &[(&str, u64)], hint: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!("empty {what}"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = (&t[..split], t[split..].trim());
    if num.is_empty() {
        return Err(format!(
            "invalid {what} '{s}': expected a number followed by a unit ({hint})"
        ));
    }
    if suffix.is_empty() {
        return Err(format!("{what} '{s}' has no unit ({hint})"));
    }
    let mult = units
        .iter()
        .find(|(u, _)| *u == suffix)
        .map(|&(_, m)| m)
        .ok_or_else(|| format!("unknown unit '{suffix}' in {what} '{s}' ({hint})"))?;
    let (ip, fp) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if fp.contains('.') || (ip.is_empty() && fp.is_empty()) {
        return Err(format!("invalid number in {what} '{s}'"));
    }
    let too_big = || format!("{what} '{s}' is too large");
    let int: u64 = if ip.is_empty() {
        0
    } else {
        ip.parse().map_err(|_| too_big())?
    };
    let mut v = int.checked_mul(mult).ok_or_else(too_big)?;
    if !fp.is_empty() {
        // fraction digits × mult / 10^len must be a whole number
        let frac: u128 = fp
            .parse()
            .map_err(|_| format!("invalid number in {what} '{s}'"))?;
        let den = 10u128
            .checked_pow(fp.len() as u32)
            .ok_or_else(|| format!("too many decimals in {what} '{s}'"))?;
        let scaled = frac * mult as u128;
        if !scaled.is_multiple_of(den) {
            return Err(format!(
                "{what} '{s}' is not a whole number of {}",
                units[0].0
            ));
        }
        v = v
            .checked_add(u64::try_from(scaled / den).map_err(|_| too_big())?)
            .ok_or_else(too_big)?;
    }
    Ok(v)
}

const TIME_UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];
const BYTE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

/// Parse a duration such as `"500us"`, `"1.5ms"`, `"2s"`, `"100ns"` into ns. A bare
/// number is rejected: in a string the unit is mandatory.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let ns = parse_scaled(
        s,
        "duration",
        TIME_UNITS,
        "use ns, us, ms or s, e.g. \"500us\"",
    )
    .map_err(|e| {
        if e.ends_with("is too large") {
            format!("duration '{s}' {}", crate::engine::time_limit_text())
        } else {
            e
        }
    })?;
    check_max(ns, Unit::Time).map_err(|e| format!("duration '{s}' {e}"))
}

/// `v` if it is within [`MAX_DIST_VALUE`], else why not.
fn check_max(v: u64, unit: Unit) -> Result<u64, String> {
    if v <= MAX_DIST_VALUE {
        return Ok(v);
    }
    Err(match unit {
        Unit::Time => crate::engine::time_limit_text(),
        Unit::Count | Unit::Bytes => {
            format!("exceeds the limit of {MAX_DIST_VALUE} (see docs/limits.md)")
        }
    })
}

/// Parse a byte size such as `"4KiB"` or `"512B"`.
pub(crate) fn parse_bytes(s: &str) -> Result<u64, String> {
    let b = parse_scaled(
        s,
        "size",
        BYTE_UNITS,
        "use B, KiB, MiB or GiB, e.g. \"4KiB\"",
    )?;
    check_max(b, Unit::Bytes).map_err(|e| format!("size '{s}' {e}"))
}

/// One scalar value in `unit`.
fn parse_scalar(v: &toml::Value, unit: Unit) -> Result<u64, String> {
    match (v, unit) {
        (toml::Value::Integer(i), _) => {
            let v = u64::try_from(*i).map_err(|_| format!("negative value {i}: must be >= 0"))?;
            check_max(v, unit).map_err(|e| format!("{i} {e}"))
        }
        (toml::Value::String(s), Unit::Time) => parse_duration_ns(s),
        (toml::Value::String(s), Unit::Bytes) => parse_bytes(s),
        (toml::Value::String(s), Unit::Count) => Err(format!("expected an integer count, found string \"{s}\"")),
        (toml::Value::Float(f), Unit::Time) => {
            Err(format!("expected a duration, found the float {f}: write an integer of ns or a string like \"1.5ms\""))
        }
        (other, Unit::Time) => Err(format!("expected a duration (integer ns or a string like \"500us\"), found {}", other.type_str())),
        (other, Unit::Count) => Err(format!("expected an integer, found {}", other.type_str())),
        (other, Unit::Bytes) => Err(format!("expected a size (integer bytes or a string like \"4KiB\"), found {}", other.type_str())),
    }
}

/// Parse a distribution written in a scenario (see the module docs for the forms).
pub(crate) fn parse_dist(v: &toml::Value, unit: Unit) -> Result<Dist, String> {
    let t = match v {
        toml::Value::Table(t) => t,
        other => return parse_scalar(other, unit).map(Dist::Const),
    };
    let kind = match t.get("dist") {
        Some(toml::Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(format!(
                "'dist' must be a string, found {}",
                other.type_str()
            ))
        }
        None => {
            return Err(
                "missing key 'dist' (one of \"const\", \"uniform\", \"exp\", \"normal\")".into(),
            )
        }
    };
    let keys: &[&str] = match kind {
        "const" => &["value"],
        "uniform" => &["min", "max"],
        "exp" => &["mean"],
        "normal" => &["mean", "std"],
        _ => {
            return Err(format!(
                "unknown dist \"{kind}\" (expected \"const\", \"uniform\", \"exp\" or \"normal\")"
            ))
        }
    };
    if let Some(k) = t
        .keys()
        .find(|k| k.as_str() != "dist" && !keys.contains(&k.as_str()))
    {
        return Err(format!(
            "unknown key '{k}' for dist \"{kind}\" (expected {})",
            keys.join(", ")
        ));
    }
    let get = |k: &str| -> Result<u64, String> {
        let v = t
            .get(k)
            .ok_or_else(|| format!("dist \"{kind}\" needs key '{k}'"))?;
        parse_scalar(v, unit).map_err(|e| format!("'{k}': {e}"))
    };
    Ok(match kind {
        "const" => Dist::Const(get("value")?),
        "uniform" => {
            let (lo, hi) = (get("min")?, get("max")?);
            if lo > hi {
                return Err(format!("uniform: min ({lo}) is greater than max ({hi})"));
            }
            Dist::Uniform { lo, hi }
        }
        "exp" => {
            let mean = get("mean")?;
            if mean == 0 {
                return Err("exp: mean must be > 0 (use a constant 0 instead)".into());
            }
            Dist::Exp { mean }
        }
        _ => Dist::Normal {
            mean: get("mean")?,
            std: get("std")?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RngStreams;

    fn rng() -> RngStream {
        RngStreams::new(7, 0).stream("dist-test")
    }

    fn stats(d: &Dist, n: usize) -> (f64, f64) {
        let mut r = rng();
        let xs: Vec<f64> = (0..n).map(|_| d.sample(&mut r) as f64).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
        (m, var.sqrt())
    }

    #[test]
    fn sample_means_and_spreads() {
        let n = 200_000;
        // (dist, expected std); tolerance on the mean: 5 standard errors.
        let cases = [
            (Dist::Const(42), 0.0),
            (
                Dist::Uniform { lo: 1000, hi: 2000 },
                (1001.0f64 * 1001.0 - 1.0).sqrt() / 12f64.sqrt(),
            ),
            (Dist::Exp { mean: 500_000 }, 500_000.0),
            (
                Dist::Normal {
                    mean: 1_000_000,
                    std: 100_000,
                },
                100_000.0,
            ),
        ];
        for (d, sd) in cases {
            let (m, s) = stats(&d, n);
            let tol = 5.0 * sd / (n as f64).sqrt() + 0.5;
            assert!(
                (m - d.mean()).abs() <= tol,
                "{d:?}: mean {m} vs {} (tol {tol})",
                d.mean()
            );
            assert!((s - sd).abs() <= 0.02 * sd + 0.5, "{d:?}: std {s} vs {sd}");
        }
    }

    #[test]
    fn uniform_covers_its_ends_only() {
        let d = Dist::Uniform { lo: 3, hi: 6 };
        let mut r = rng();
        let mut seen = [0u32; 8];
        for _ in 0..4000 {
            seen[d.sample(&mut r) as usize] += 1;
        }
        assert_eq!(seen[..3], [0, 0, 0]);
        assert_eq!(seen[7], 0);
        assert!(
            seen[3..7].iter().all(|&c| (850..1150).contains(&c)),
            "{seen:?}"
        );
        let full = Dist::Uniform {
            lo: 0,
            hi: u64::MAX,
        };
        let _ = full.sample(&mut r); // no overflow
    }

    #[test]
    fn exponential_tail_and_clamped_normal() {
        // P(X > 2·mean) = e^-2 ≈ 0.1353
        let d = Dist::Exp { mean: 1000 };
        let mut r = rng();
        let n = 100_000;
        let over = (0..n).filter(|_| d.sample(&mut r) > 2000).count() as f64 / n as f64;
        assert!((over - (-2f64).exp()).abs() < 0.005, "{over}");
        // Normal with mean 0: half the draws clamp to 0; mean is std/√(2π).
        let d = Dist::Normal { mean: 0, std: 1000 };
        assert!((d.mean() - 1000.0 / (2.0 * std::f64::consts::PI).sqrt()).abs() < 1e-3);
        let (m, _) = stats(&d, n);
        assert!((m - d.mean()).abs() < 8.0, "{m} vs {}", d.mean());
        let mut r = rng();
        let zeros = (0..n).filter(|_| d.sample(&mut r) == 0).count() as f64 / n as f64;
        assert!((zeros - 0.5).abs() < 0.01, "{zeros}");
    }

    #[test]
    fn sampling_is_deterministic_and_draws_are_fixed() {
        let ds = [
            Dist::Exp { mean: 77 },
            Dist::Normal {
                mean: 5000,
                std: 4000,
            },
            Dist::Uniform { lo: 1, hi: 9 },
            Dist::Const(5),
        ];
        let run = || {
            let mut r = rng();
            (0..1000)
                .map(|i| ds[i % 4].sample(&mut r))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
        // exp spends 1 draw, normal 2, const 0: the stream position after them is fixed.
        let mut a = rng();
        Dist::Exp { mean: 1 }.sample(&mut a);
        Dist::Normal { mean: 0, std: 9 }.sample(&mut a);
        Dist::Const(1).sample(&mut a);
        let mut b = rng();
        for _ in 0..3 {
            b.next_u64();
        }
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn durations_good_and_bad() {
        let good = [
            ("500us", 500_000),
            ("500µs", 500_000),
            ("1.5ms", 1_500_000),
            ("2s", 2_000_000_000),
            ("100ns", 100),
            (" 0.25 s ", 250_000_000),
            (".5ms", 500_000),
            ("3.000ns", 3),
            ("0ms", 0),
            ("1000000s", crate::engine::MAX_TIME_NS),
        ];
        for (s, want) in good {
            assert_eq!(parse_duration_ns(s), Ok(want), "{s}");
        }
        let bad = [
            ("250", "has no unit"),
            ("", "empty duration"),
            ("ms", "expected a number"),
            ("-5ms", "expected a number"),
            ("5 min", "unknown unit 'min'"),
            ("1.5ns", "not a whole number of ns"),
            ("1.2.3ms", "invalid number"),
            ("99999999999999999999s", "exceeds the limit of 1000000 s"),
            ("18446744073709551615s", "exceeds the limit of 1000000 s"),
            ("18446744073709ms", "exceeds the limit of 1000000 s"),
            ("1000000.000000001s", "exceeds the limit of 1000000 s"),
        ];
        for (s, msg) in bad {
            let e = parse_duration_ns(s).unwrap_err();
            assert!(e.contains(msg), "{s}: {e}");
        }
        assert_eq!(parse_bytes("64KiB"), Ok(65536));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert!(parse_bytes("4KB")
            .unwrap_err()
            .contains("unknown unit 'KB'"));
    }

    fn val(src: &str) -> toml::Value {
        let t: toml::Table = toml::from_str(&format!("x = {src}")).unwrap();
        t["x"].clone()
    }

    #[test]
    fn parse_dist_forms() {
        let good = [
            ("500", Unit::Time, Dist::Const(500)),
            ("\"500us\"", Unit::Time, Dist::Const(500_000)),
            (
                "{ dist = \"const\", value = \"1ms\" }",
                Unit::Time,
                Dist::Const(1_000_000),
            ),
            (
                "{ dist = \"exp\", mean = \"500us\" }",
                Unit::Time,
                Dist::Exp { mean: 500_000 },
            ),
            (
                "{ dist = \"uniform\", min = \"1ms\", max = \"2ms\" }",
                Unit::Time,
                Dist::Uniform {
                    lo: 1_000_000,
                    hi: 2_000_000,
                },
            ),
            (
                "{ dist = \"normal\", mean = \"1ms\", std = \"100us\" }",
                Unit::Time,
                Dist::Normal {
                    mean: 1_000_000,
                    std: 100_000,
                },
            ),
            (
                "{ dist = \"uniform\", min = 1, max = 1 }",
                Unit::Count,
                Dist::Uniform { lo: 1, hi: 1 },
            ),
            ("40", Unit::Count, Dist::Const(40)),
            ("\"4KiB\"", Unit::Bytes, Dist::Const(4096)),
            (
                "{ dist = \"exp\", mean = \"64KiB\" }",
                Unit::Bytes,
                Dist::Exp { mean: 65536 },
            ),
        ];
        for (src, unit, want) in good {
            assert_eq!(parse_dist(&val(src), unit), Ok(want), "{src}");
        }
        let bad = [
            ("\"250\"", Unit::Time, "has no unit"),
            ("-3", Unit::Time, "negative value -3"),
            ("1.5", Unit::Time, "found the float 1.5"),
            ("true", Unit::Time, "expected a duration"),
            ("[1, 2]", Unit::Count, "expected an integer, found array"),
            ("\"7\"", Unit::Count, "expected an integer count"),
            ("\"4KB\"", Unit::Bytes, "unknown unit 'KB'"),
            ("{ mean = \"1ms\" }", Unit::Time, "missing key 'dist'"),
            ("{ dist = 3 }", Unit::Time, "'dist' must be a string"),
            (
                "{ dist = \"gamma\", mean = 1 }",
                Unit::Time,
                "unknown dist \"gamma\"",
            ),
            (
                "{ dist = \"exp\", mean = \"1ms\", sd = 1 }",
                Unit::Time,
                "unknown key 'sd' for dist \"exp\"",
            ),
            (
                "{ dist = \"uniform\", lo = 1, hi = 2 }",
                Unit::Count,
                "unknown key 'hi'",
            ),
            (
                "{ dist = \"uniform\", min = 1 }",
                Unit::Count,
                "needs key 'max'",
            ),
            (
                "{ dist = \"uniform\", min = 5, max = 2 }",
                Unit::Count,
                "min (5) is greater than max (2)",
            ),
            (
                "{ dist = \"normal\", mean = \"1ms\", std = \"x\" }",
                Unit::Time,
                "'std': invalid duration 'x'",
            ),
            (
                "{ dist = \"exp\", mean = 0 }",
                Unit::Time,
                "mean must be > 0",
            ),
        ];
        for (src, unit, msg) in bad {
            let e = parse_dist(&val(src), unit).unwrap_err();
            assert!(e.contains(msg), "{src}: {e}");
        }
    }
}
