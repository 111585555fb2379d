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
    /// after row.
    pub fn forward(&self, input: &[f32], rows: usize) -> Vec<f32> {
        let mut current = input.to_vec();
        let mut next = Vec::new();
        let last = self.layers.len().saturating_sub(1);
        for (index, layer) in self.layers.iter().enumerate() {
            next.clear();
            next.reserve(rows * layer.outputs);
            for row in current.chunks_exact(layer.inputs).take(rows) {
                for (weights, bias) in layer.weight.chunks_exact(layer.inputs).zip(&layer.bias) {
                    let sum = dot(weights, row) + bias;
                    next.push(if index < last {
                        crate::activation::tanh(sum)
                    } else {
                        sum
                    });
                }
            }
            std::mem::swap(&mut current, &mut next);
        }
        current
    }
}

/// Dot product in eight independent lanes, so the compiler vectorises it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}
