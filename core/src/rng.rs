//! Seeded randomness. Every RNG in mosaic is built here from an explicit seed, so results
//! never depend on global state, thread scheduling or process.

use rand::SeedableRng;

/// The RNG used by environments and baselines (xoshiro256++: fast, stable algorithm).
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

/// An RNG seeded from `seed`.
pub fn seeded(seed: u64) -> Rng {
    Rng::seed_from_u64(seed)
}

/// A seed for a named stream (an agent id, a subsystem) derived from a parent seed, stable
/// across platforms and versions (FNV-1a of the label, mixed with SplitMix64).
///
/// ```
/// use mosaic_core::rng::derive_seed;
/// assert_eq!(derive_seed(7, "green_0"), derive_seed(7, "green_0"));
/// assert_ne!(derive_seed(7, "green_0"), derive_seed(7, "green_1"));
/// assert_ne!(derive_seed(7, "green_0"), derive_seed(8, "green_0"));
/// ```
pub fn derive_seed(parent: u64, label: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in label.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix64(parent ^ splitmix64(hash))
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
