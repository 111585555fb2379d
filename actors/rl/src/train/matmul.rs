//! The matrices of the plain-Rust MLP update: candle tensors, so that products go through
//! candle's gemm (which picks AVX2/FMA kernels at run time: safe Rust compiled for the
//! baseline CPU cannot, and was measured twice as slow), whose values the update reads
//! and changes in place. No product copies its operands or its result: a buffer becomes a
//! tensor by move, transposes are strides, and element-wise passes (bias, tanh, loss
//! gradients) work on the tensors' own storage.

use crate::error::{Result, RlError};
use candle_core::{CpuStorage, Device, InplaceOp1, Layout, Storage, Tensor};

/// `values` (row after row) as a `rows × cols` tensor, without a copy.
pub(super) fn matrix(values: Vec<f32>, rows: usize, cols: usize) -> Result<Tensor> {
    Ok(Tensor::from_vec(values, (rows, cols), &Device::Cpu)?)
}

/// `f` of the values of `tensor` (a contiguous `f32` tensor on the CPU), without a copy.
pub(super) fn read<R>(tensor: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Result<R> {
    let (storage, layout) = tensor.storage_and_layout();
    match (&*storage, layout.contiguous_offsets()) {
        (Storage::Cpu(CpuStorage::F32(values)), Some((start, end))) => Ok(f(&values[start..end])),
        _ => Err(not_plain(tensor)),
    }
}

/// Applies `f` to the values of `tensor` (a contiguous `f32` tensor on the CPU) in place.
pub(super) fn modify(tensor: &Tensor, f: impl Fn(&mut [f32])) -> Result<()> {
    tensor
        .inplace_op1(&InPlace(f))
        .map_err(|_| not_plain(tensor))
}

/// The error for a tensor that is not a contiguous `f32` one on the CPU.
fn not_plain(tensor: &Tensor) -> RlError {
    RlError::Tensor(candle_core::Error::Msg(format!(
        "the MLP update needs contiguous f32 CPU tensors, not {:?} {:?} on {:?}",
        tensor.dtype(),
        tensor.layout(),
        tensor.device().location()
    )))
}

/// A change of a tensor's values in place, as candle runs it.
struct InPlace<F>(F);

impl<F: Fn(&mut [f32])> InplaceOp1 for InPlace<F> {
    fn name(&self) -> &'static str {
        "mlp-update-in-place"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        match (storage, layout.contiguous_offsets()) {
            (CpuStorage::F32(values), Some((start, end))) => {
                (self.0)(&mut values[start..end]);
                Ok(())
            }
            _ => Err(candle_core::Error::Msg(
                "not a contiguous f32 tensor".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_of_transposes_match_the_definition() {
        let (m, k, n) = (9, 13, 5);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let at = |i: usize, p: usize| a[i * k + p];
        let bt = |p: usize, j: usize| b[p * n + j];
        let (ta, tb) = (
            matrix(a.clone(), m, k).unwrap(),
            matrix(b.clone(), k, n).unwrap(),
        );
        let c = ta.matmul(&tb).unwrap();
        // (bᵀ aᵀ) is (a b)ᵀ.
        let ct = tb.t().unwrap().matmul(&ta.t().unwrap()).unwrap();
        let (c, ct) = (
            read(&c, <[f32]>::to_vec).unwrap(),
            read(&ct, <[f32]>::to_vec).unwrap(),
        );
        for i in 0..m {
            for j in 0..n {
                let expected: f32 = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
                assert!((c[i * n + j] - expected).abs() < 1e-4, "{i},{j}");
                assert!((ct[j * m + i] - expected).abs() < 1e-4, "{i},{j}");
            }
        }
    }

    #[test]
    fn values_change_in_place_and_strided_tensors_are_refused() {
        let t = matrix(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3).unwrap();
        modify(&t, |values| values.iter_mut().for_each(|v| *v *= 10.0)).unwrap();
        assert_eq!(
            t.to_vec2::<f32>().unwrap(),
            vec![vec![10.0, 20.0, 30.0], vec![40.0, 50.0, 60.0]]
        );
        assert_eq!(read(&t, |v| v.iter().sum::<f32>()).unwrap(), 210.0);
        let transposed = t.t().unwrap();
        let error = read(&transposed, |_| ()).unwrap_err().to_string();
        assert!(error.contains("contiguous f32"), "{error}");
        assert!(modify(&transposed, |_| ()).is_err());
        let integers = Tensor::new(&[1u32, 2], &Device::Cpu).unwrap();
        assert!(read(&integers, |_| ()).is_err());
    }
}
