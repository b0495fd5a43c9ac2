//! The real kernel as oracle (`schedlab oracle`): the same scenario in a QEMU guest
//! of the scenario's topology, and the decisions of both compared.
//!
//! (Essay to be completed as the pieces land: guest runner, decision statistics,
//! comparison, the recorded suite.)

pub mod decisions;
pub mod domains;
