//! A run's results across a process boundary, and the model's names in them.
//!
//! A run whose scheduler is native C code runs in a child process
//! (`experiment::sandbox`). Its result comes back to the parent as serialized
//! data. The model names things with `&'static str`: placement reasons,
//! migration levels, function names, units. Those are strings of the binary.
//! A deserialized name is mapped back to one `&'static str` per distinct
//! spelling ([`intern`]). The set of spellings is the model's vocabulary, so it
//! stays small, and each one is kept for the life of the process.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde::{Deserialize, Deserializer};

/// A name of the model's, in a field that is deserialized with [`de_static`]
/// (spelled as an alias so that serde does not take the field as borrowed from
/// its input).
pub type Name = &'static str;

/// The one `&'static str` spelled `s`.
pub fn intern(s: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// `deserialize_with` for a `&'static str` field.
pub fn de_static<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    Ok(intern(&String::deserialize(d)?))
}

/// `deserialize_with` for a map keyed by `&'static str`.
pub fn de_static_keys<'de, D, V>(d: D) -> Result<BTreeMap<&'static str, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    Ok(BTreeMap::<String, V>::deserialize(d)?
        .into_iter()
        .map(|(k, v)| (intern(&k), v))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_static_string_per_spelling() {
        let a = intern(&String::from("wake_affine"));
        let b = intern("wake_affine");
        assert!(std::ptr::eq(a, b));
        assert_eq!(a, "wake_affine");
        assert!(!std::ptr::eq(intern("llc"), a));
    }
}
