//! Task behaviour programs and their random inputs. Knows nothing of policies.

pub mod dist;
