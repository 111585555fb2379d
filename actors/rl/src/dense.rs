//! Inference of MLP networks in plain Rust: the same layers as the candle network, read
//! once into flat arrays, evaluated without allocating tensors. A decision of a small MLP
//! costs a few microseconds this way, against tens through candle's per-operation
//! dispatch; candle remains the network's definition (and trains CNNs; MLPs train through `train::mlp_update`).

use crate::error::Result;
use candle_nn::Linear;

/// One fully connected layer: `outputs × inputs` weights, row-major.
#[derive(Clone, Debug)]
struct Layer {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// A stack of fully connected layers with tanh between them (none after the last).
#[derive(Clone, Debug)]
pub struct DenseStack {
    layers: Vec<Layer>,
}

impl DenseStack {
    /// The layers `hidden` (tanh after each) followed by `head`, as they are now.
    pub(crate) fn new(hidden: &[Linear], head: &Linear) -> Result<Self> {
        let layers = hidden
            .iter()
            .chain(std::iter::once(head))
            .map(|linear| {
                let (outputs, inputs) = linear.weight().dims2()?;
                let weight = linear.weight().flatten_all()?.to_vec1::<f32>()?;
                let bias = match linear.bias() {
                    Some(b) => b.to_vec1::<f32>()?,
                    None => vec![0.0; outputs],
                };
                Ok(Layer {
                    weight,
                    bias,
                    inputs,
                    outputs,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { layers })
    }

    /// Values per row of the output.
    pub fn outputs(&self) -> usize {
        self.layers.last().map_or(0, |l| l.outputs)
    }

    /// Evaluates `rows` inputs laid out row after row in `input`; answers the outputs row
    /// after row. Rows are evaluated [`BLOCK`] at a time, each weight read once per block;
    /// every row's arithmetic is the same whatever the other rows, so a row's outputs do
    /// not depend on the batch it is in (tested).
    pub fn forward(&self, input: &[f32], rows: usize) -> Vec<f32> {
        let rows = self
            .layers
            .first()
            .map_or(0, |first| rows.min(input.len() / first.inputs.max(1)));
        let mut current = input.to_vec();
        let mut next = Vec::new();
        let last = self.layers.len().saturating_sub(1);
        for (index, layer) in self.layers.iter().enumerate() {
            next.clear();
            next.resize(rows * layer.outputs, 0.0);
            let blocks = current[..rows * layer.inputs].chunks(BLOCK * layer.inputs);
            for (block, out) in blocks.zip(next.chunks_mut(BLOCK * layer.outputs)) {
                for (output, (weights, bias)) in layer
                    .weight
                    .chunks_exact(layer.inputs)
                    .zip(&layer.bias)
                    .enumerate()
                {
                    let sums = dot_block(weights, block);
                    for (row, sum) in sums.iter().take(block.len() / layer.inputs).enumerate() {
                        let sum = sum + bias;
                        out[row * layer.outputs + output] = if index < last {
                            crate::activation::tanh(sum)
                        } else {
                            sum
                        };
                    }
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        current.truncate(rows * self.outputs());
        current
    }
}

/// Rows evaluated together by [`DenseStack::forward`].
pub const BLOCK: usize = 4;

/// Dot products of `weights` with each row of `block` (up to [`BLOCK`] rows of
/// `weights.len()` values), each in eight independent lanes so the compiler vectorises
/// it. A row's sum is computed the same way whatever the other rows.
fn dot_block(weights: &[f32], block: &[f32]) -> [f32; BLOCK] {
    let width = weights.len();
    let rows = block.len() / width.max(1);
    let whole = width - width % 8;
    let mut lanes = [[0f32; 8]; BLOCK];
    for (start, w) in (0..whole).step_by(8).zip(weights.chunks_exact(8)) {
        for (row, lane) in lanes.iter_mut().enumerate().take(rows) {
            let x = &block[row * width + start..row * width + start + 8];
            for i in 0..8 {
                lane[i] += w[i] * x[i];
            }
        }
    }
    let mut sums = [0f32; BLOCK];
    for (row, (sum, lane)) in sums.iter_mut().zip(&lanes).enumerate().take(rows) {
        let tail: f32 = weights[whole..]
            .iter()
            .zip(&block[row * width + whole..(row + 1) * width])
            .map(|(w, x)| w * x)
            .sum();
        *sum = lane.iter().sum::<f32>() + tail;
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(sizes: &[usize]) -> DenseStack {
        let layers = sizes
            .windows(2)
            .enumerate()
            .map(|(l, pair)| {
                let (inputs, outputs) = (pair[0], pair[1]);
                let value = |i: usize| ((i * 7 + l * 13) as f32 * 0.37).sin() * 0.4;
                Layer {
                    weight: (0..inputs * outputs).map(value).collect(),
                    bias: (0..outputs).map(|i| value(i + 1000)).collect(),
                    inputs,
                    outputs,
                }
            })
            .collect();
        DenseStack { layers }
    }

    #[test]
    fn a_rows_outputs_do_not_depend_on_its_batch() {
        // 57 inputs: soccer's observation, seven whole lanes and a tail of one.
        let net = stack(&[57, 64, 64, 8]);
        let rows = 2 * BLOCK + 1;
        let input: Vec<f32> = (0..rows * 57).map(|i| (i as f32 * 0.11).cos()).collect();
        let batched = net.forward(&input, rows);
        assert_eq!(batched.len(), rows * 8);
        for row in 0..rows {
            let alone = net.forward(&input[row * 57..(row + 1) * 57], 1);
            assert_eq!(alone, batched[row * 8..(row + 1) * 8], "row {row}");
        }
    }

    #[test]
    fn rows_past_the_input_are_not_invented() {
        let net = stack(&[9, 4, 2]);
        assert_eq!(net.forward(&[0.5; 18], 3).len(), 4);
        assert!(net.forward(&[], 2).is_empty());
    }
}
