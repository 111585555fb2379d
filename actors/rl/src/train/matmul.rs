//! Matrix products of the plain-Rust MLP update on flat row-major `f32` buffers. They go
//! through candle's product (gemm, which picks AVX2/FMA kernels at run time: safe Rust
//! compiled for the baseline CPU cannot, and was measured twice as slow); transposes are
//! strides, not copies.

use crate::error::Result;
use candle_core::{Device, Tensor};

/// A row-major matrix, possibly read transposed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Matrix<'a> {
    /// The values, row after row.
    pub(super) data: &'a [f32],
    /// Rows and columns as stored.
    pub(super) rows: usize,
    pub(super) cols: usize,
    /// Read as its transpose.
    pub(super) transposed: bool,
}

impl<'a> Matrix<'a> {
    /// `data` as `rows × cols`.
    pub(super) fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self {
            data: &data[..rows * cols],
            rows,
            cols,
            transposed: false,
        }
    }

    /// Its transpose.
    pub(super) fn t(self) -> Self {
        Self {
            transposed: !self.transposed,
            ..self
        }
    }

    fn tensor(self) -> Result<Tensor> {
        let tensor = Tensor::from_slice(self.data, (self.rows, self.cols), &Device::Cpu)?;
        Ok(if self.transposed { tensor.t()? } else { tensor })
    }
}

/// `into = a · b`, row-major.
pub(super) fn matmul(a: Matrix<'_>, b: Matrix<'_>, into: &mut [f32]) -> Result<()> {
    let product = a.tensor()?.matmul(&b.tensor()?)?;
    into.copy_from_slice(&product.flatten_all()?.to_vec1::<f32>()?);
    Ok(())
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
        let mut c = vec![f32::NAN; m * n];
        matmul(Matrix::new(&a, m, k), Matrix::new(&b, k, n), &mut c).unwrap();
        // (bᵀ aᵀ) is (a b)ᵀ.
        let mut ct = vec![f32::NAN; n * m];
        matmul(
            Matrix::new(&b, k, n).t(),
            Matrix::new(&a, m, k).t(),
            &mut ct,
        )
        .unwrap();
        for i in 0..m {
            for j in 0..n {
                let expected: f32 = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
                assert!((c[i * n + j] - expected).abs() < 1e-4, "{i},{j}");
                assert!((ct[j * m + i] - expected).abs() < 1e-4, "{i},{j}");
            }
        }
    }
}
