//! Seeded randomness. Every RNG in mosaic is built here from an explicit seed, so results
//! never depend on global state, thread scheduling or process.

use rand::SeedableRng;

/// The RNG used by environments and baselines (xoshiro256++: fast, stable algorithm).
pub type Rng = rand_xoshiro::Xoshiro256PlusPlus;

/// An RNG seeded from `seed`.
pub fn seeded(seed: u64) -> Rng {
    Rng::seed_from_u64(seed)
}

/// The position of `rng` as a policy or environment state (see `Policy::save_state`).
pub fn save_state(rng: &Rng) -> Option<serde_json::Value> {
    serde_json::to_value(rng).ok()
}

/// An RNG continuing from a state answered by [`save_state`].
///
/// ```
/// use mosaic_core::rng::{load_state, save_state, seeded};
/// use rand::Rng as _;
/// let mut rng = seeded(3);
/// let state = save_state(&rng).unwrap();
/// let mut copy = load_state(&state).unwrap();
/// assert_eq!(rng.random::<u64>(), copy.random::<u64>());
/// assert!(load_state(&serde_json::json!("nonsense")).is_err());
/// ```
pub fn load_state(state: &serde_json::Value) -> Result<Rng, String> {
    serde::Deserialize::deserialize(state).map_err(|e| format!("not a random generator state: {e}"))
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
