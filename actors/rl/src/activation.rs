//! Activation functions computed faster than libm, to float rounding.

/// tanh as a 13/6-degree rational function (Eigen's, accurate to a few ulp; exactly ±1
/// beyond ±7.9): libm's `tanhf` (through
/// `expm1f`) took most of a PPO update's time, this one is a few multiplications.
pub(crate) fn tanh(x: f32) -> f32 {
    const NUMERATOR: [f32; 7] = [
        -2.760_768_5e-16,
        2.000_188e-13,
        -8.604_672e-11,
        5.122_297e-8,
        1.485_722_4e-5,
        6.372_619_3e-4,
        4.893_524_6e-3,
    ];
    const DENOMINATOR: [f32; 4] = [1.198_258_4e-6, 1.185_347_1e-4, 2.268_434_6e-3, 4.893_525e-3];
    let clamped = x.clamp(-7.905_311, 7.905_311);
    let x2 = clamped * clamped;
    let p = NUMERATOR.iter().fold(0.0, |acc, c| acc * x2 + c);
    let q = DENOMINATOR.iter().fold(0.0, |acc, c| acc * x2 + c);
    let rational = clamped * p / q;
    // A select rather than an early return, so that loops over many values vectorise.
    if x.abs() < 4e-4 { x } else { rational }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tanh_is_within_a_few_ulp_of_libm() {
        let mut worst = 0f32;
        for i in -200_000..=200_000 {
            let x = i as f32 * 5e-5;
            let (ours, exact) = (tanh(x), x.tanh());
            let ulp = (exact.abs().max(f32::MIN_POSITIVE) * f32::EPSILON).max(1e-45);
            worst = worst.max((ours - exact).abs() / ulp);
        }
        assert!(worst <= 4.0, "{worst} ulp");
        for x in [20.0, 1e9, f32::INFINITY] {
            assert_eq!(tanh(x), 1.0);
            assert_eq!(tanh(-x), -1.0);
        }
        assert_eq!(tanh(1e-6), 1e-6);
    }
}
