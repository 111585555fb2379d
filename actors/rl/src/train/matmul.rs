//! Matrix products of the plain-Rust MLP update on flat row-major `f32` buffers, through
//! ndarray's product (matrixmultiply's kernels, which pick AVX/FMA at run time: safe Rust
//! compiled for the baseline CPU cannot, and was measured twice as slow). A product is
//! written straight into its destination and transposes are strides: no copy, no
//! allocation, and one thread (the update spreads its own work over threads). candle's
//! product, used before, copied each operand and result, and asked the operating system
//! for the core count on every call (a third of the update's time).

use super::mlp_update::unfit;
use crate::error::{Result, RlError};
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeError};

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
            data,
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

    fn view(self) -> Result<ArrayView2<'a, f32>> {
        let data = self.data.get(..self.rows * self.cols).unwrap_or(self.data);
        let view = ArrayView2::from_shape((self.rows, self.cols), data).map_err(shape_error)?;
        Ok(if self.transposed {
            view.reversed_axes()
        } else {
            view
        })
    }
}

fn shape_error(error: ShapeError) -> RlError {
    unfit(format!("a matrix of the MLP update: {error}"))
}

/// `into = a · b`, row-major (`into` holds at least the product's values).
pub(super) fn matmul(a: Matrix<'_>, b: Matrix<'_>, into: &mut [f32]) -> Result<()> {
    let (a, b) = (a.view()?, b.view()?);
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    if k != k2 {
        return Err(unfit(format!(
            "the MLP update multiplies a {m}×{k} matrix by a {k2}×{n} one"
        )));
    }
    let into = into.get_mut(..m * n).unwrap_or(&mut []);
    let mut product = ArrayViewMut2::from_shape((m, n), into).map_err(shape_error)?;
    general_mat_mul(1.0, &a, &b, 0.0, &mut product);
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
        // NaN first: the product must not read its destination.
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

    #[test]
    fn shapes_that_do_not_fit_are_errors() {
        let a = vec![1.0; 6];
        let mut into = vec![0.0; 4];
        let error = matmul(Matrix::new(&a, 2, 3), Matrix::new(&a, 2, 3), &mut into)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2×3 matrix by a 2×3"), "{error}");
        assert!(matmul(Matrix::new(&a, 3, 3), Matrix::new(&a, 3, 2), &mut into).is_err());
        let mut small = vec![0.0; 3];
        assert!(matmul(Matrix::new(&a, 2, 3), Matrix::new(&a, 3, 2), &mut small).is_err());
    }
}
