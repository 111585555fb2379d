use super::*;

fn shape(architecture: Architecture, obs_shape: Vec<usize>) -> NetShape {
    NetShape::new(obs_shape, 5, architecture)
}

#[test]
fn same_seed_same_weights_and_rows_are_independent_of_the_batch() {
    let a = ActorCritic::new(shape(Architecture::default(), vec![12]), 3).unwrap();
    let b = ActorCritic::new(shape(Architecture::default(), vec![12]), 3).unwrap();
    let c = ActorCritic::new(shape(Architecture::default(), vec![12]), 4).unwrap();
    let data: Vec<f32> = (0..48).map(|i| (i as f32 * 0.37).sin()).collect();
    let obs = batch(&data, 4, 12).unwrap();
    let la: Vec<Vec<f32>> = a.logits(&obs).unwrap().to_vec2().unwrap();
    let lb: Vec<Vec<f32>> = b.logits(&obs).unwrap().to_vec2().unwrap();
    let lc: Vec<Vec<f32>> = c.logits(&obs).unwrap().to_vec2().unwrap();
    assert_eq!(la, lb);
    assert_ne!(la, lc);
    // Batched inference answers each row as if it were alone.
    for row in 0..4 {
        let one = batch(&data[row * 12..(row + 1) * 12], 1, 12).unwrap();
        let alone: Vec<Vec<f32>> = a.logits(&one).unwrap().to_vec2().unwrap();
        assert_eq!(alone[0], la[row], "row {row}");
    }
    assert_eq!(a.values(&obs).unwrap().dims(), &[4]);
}

#[test]
fn cnn_reads_planes_and_weights_round_trip() {
    let arch = Architecture::for_shape(&[2, 3, 3]);
    assert!(matches!(arch, Architecture::Cnn { .. }));
    let net = ActorCritic::new(shape(arch.clone(), vec![2, 3, 3]), 1).unwrap();
    let obs = batch(&[0.5; 36], 2, 18).unwrap();
    let logits: Vec<Vec<f32>> = net.logits(&obs).unwrap().to_vec2().unwrap();
    let copy =
        ActorCritic::from_tensors(shape(arch, vec![2, 3, 3]), net.params().tensors()).unwrap();
    assert_eq!(copy.logits(&obs).unwrap().to_vec2::<f32>().unwrap(), logits);
    // Weights of another architecture are refused with the parameter's name.
    let err = ActorCritic::from_tensors(
        shape(Architecture::default(), vec![18]),
        net.params().tensors(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("actor.fc0.weight"), "{err}");
    assert!(
        Architecture::default().check(&[]).is_err()
            && Architecture::for_shape(&[3, 3, 3]).check(&[27]).is_err()
    );
}

/// One GRU step written out with scalars, as PyTorch's documentation states it.
fn reference_gru_step(
    weights: &HashMap<&str, Vec<f32>>,
    x: &[f32],
    h: &[f32],
    units: usize,
) -> Vec<f32> {
    let inputs = x.len();
    let sigmoid = |v: f32| 1.0 / (1.0 + (-v).exp());
    let gate = |which: &str, bias: &str, gate: usize, j: usize, v: &[f32], width: usize| {
        let row = gate * units + j;
        let w = &weights[which][row * width..(row + 1) * width];
        w.iter().zip(v).map(|(a, b)| a * b).sum::<f32>() + weights[bias][row]
    };
    (0..units)
        .map(|j| {
            let r = sigmoid(
                gate("weight_ih", "bias_ih", 0, j, x, inputs)
                    + gate("weight_hh", "bias_hh", 0, j, h, units),
            );
            let z = sigmoid(
                gate("weight_ih", "bias_ih", 1, j, x, inputs)
                    + gate("weight_hh", "bias_hh", 1, j, h, units),
            );
            let n = (gate("weight_ih", "bias_ih", 2, j, x, inputs)
                + r * gate("weight_hh", "bias_hh", 2, j, h, units))
            .tanh();
            (1.0 - z) * n + z * h[j]
        })
        .collect()
}

#[test]
fn the_gru_layer_computes_pytorchs_equations_and_unrolls_like_its_steps() {
    let (inputs, units, actions) = (3, 4, 5);
    let arch = Architecture::Mlp {
        hidden: vec![],
        gru: Some(units),
    };
    let net = ActorCritic::new(shape(arch.clone(), vec![inputs]), 1).unwrap();
    let mut names: Vec<&String> = net.params().iter().map(|(n, _)| n).collect();
    names.retain(|n| n.starts_with("actor.gru."));
    assert_eq!(
        names,
        [
            "actor.gru.bias_hh",
            "actor.gru.bias_ih",
            "actor.gru.weight_hh",
            "actor.gru.weight_ih"
        ]
    );
    // Known weights, distinct per entry, replacing the drawn ones.
    let known = |len: usize, salt: f32| -> Vec<f32> {
        (0..len)
            .map(|i| ((i as f32 + salt) * 0.731).sin() * 0.8)
            .collect()
    };
    let mut weights: HashMap<&str, Vec<f32>> = HashMap::new();
    weights.insert("weight_ih", known(3 * units * inputs, 0.0));
    weights.insert("weight_hh", known(3 * units * units, 50.0));
    weights.insert("bias_ih", known(3 * units, 100.0));
    weights.insert("bias_hh", known(3 * units, 150.0));
    let mut tensors = net.params().tensors();
    for (name, values) in &weights {
        let key = format!("actor.gru.{name}");
        let dims = tensors[&key].dims().to_vec();
        tensors.insert(
            key,
            Tensor::from_vec(values.clone(), dims, &Device::Cpu).unwrap(),
        );
    }
    let net = ActorCritic::from_tensors(shape(arch, vec![inputs]), tensors).unwrap();
    let gru = net.actor.gru.as_ref().unwrap();

    let xs = [[0.5, -1.0, 2.0], [0.0, 0.3, -0.7], [1.5, 1.0, 0.0]];
    let mut h_reference = vec![0.1, -0.2, 0.3, 0.0];
    let mut h = Tensor::from_vec(h_reference.clone(), (1, units), &Device::Cpu).unwrap();
    for x in &xs {
        let x_tensor = Tensor::from_slice(x, (1, inputs), &Device::Cpu).unwrap();
        h = gru.step(&x_tensor, &h).unwrap();
        h_reference = reference_gru_step(&weights, x, &h_reference, units);
        let ours: Vec<f32> = h.flatten_all().unwrap().to_vec1().unwrap();
        for (a, b) in ours.iter().zip(&h_reference) {
            assert!((a - b).abs() < 1e-6, "{ours:?} vs {h_reference:?}");
        }
    }

    // Unrolled sequences (time-major, a restart in the second) answer what stepping
    // each sequence alone answers, and gradients reach the recurrent weights.
    let obs: Vec<f32> = (0..3 * 2 * inputs)
        .map(|i| (i as f32 * 0.37).cos())
        .collect();
    let state = [0.2f32, -0.1, 0.4, 0.0, -0.3, 0.1, 0.0, 0.25];
    let keep = [1.0f32, 1.0, 1.0, 0.0, 1.0, 1.0];
    let dev = Device::Cpu;
    let sequences = Sequences {
        obs: Tensor::from_slice(&obs, (6, inputs), &dev).unwrap(),
        critic: Tensor::from_slice(&obs, (6, inputs), &dev).unwrap(),
        actor_state: Tensor::from_slice(&state, (2, units), &dev).unwrap(),
        critic_state: Tensor::from_slice(&state, (2, units), &dev).unwrap(),
        keep: Tensor::from_slice(&keep, (6, 1), &dev).unwrap(),
        steps: 3,
    };
    let (logits, values) = net.unroll(&sequences).unwrap();
    let logits: Vec<Vec<f32>> = logits.to_vec2().unwrap();
    for s in 0..2 {
        let mut h =
            Tensor::from_slice(&state[s * units..(s + 1) * units], (1, units), &dev).unwrap();
        for t in 0..3 {
            let row = t * 2 + s;
            if keep[row] == 0.0 {
                h = h.zeros_like().unwrap();
            }
            let x = Tensor::from_slice(&obs[row * inputs..(row + 1) * inputs], (1, inputs), &dev)
                .unwrap();
            let (step_logits, next) = net.logits_step(&x, Some(&h)).unwrap();
            h = next.unwrap();
            let step_logits: Vec<Vec<f32>> = step_logits.to_vec2().unwrap();
            assert_eq!(step_logits[0].len(), actions);
            for (a, b) in step_logits[0].iter().zip(&logits[row]) {
                assert!((a - b).abs() < 1e-6, "sequence {s} step {t}");
            }
        }
    }
    let grads = values.sum_all().unwrap().backward().unwrap();
    let (_, weight_hh) = net
        .params()
        .iter()
        .find(|(n, _)| n.as_str() == "critic.gru.weight_hh")
        .unwrap();
    let g = grads.get(weight_hh.as_tensor()).unwrap();
    assert!(
        g.abs()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
            > 0.0
    );
}

#[test]
fn masked_choice_follows_the_distribution() {
    let logits = [0.0, (3f32).ln(), 5.0];
    let legal = [true, true, false];
    let mut rng = seeded(9);
    let mut counts = [0; 3];
    for _ in 0..4000 {
        let (a, logp) = choose(&logits, &legal, Some(&mut rng));
        counts[a] += 1;
        let expected = if a == 0 { 0.25f32 } else { 0.75f32 }.ln();
        assert!((logp - expected).abs() < 1e-5);
    }
    assert_eq!(counts[2], 0);
    assert!((2800..3200).contains(&counts[1]), "{counts:?}");
    assert_eq!(choose(&logits, &[false; 3], None), (0, 0.0));
    assert_eq!(choose(&logits, &[], None).0, 2);
    let mut mask = Vec::new();
    mask_row(&legal, 3, &mut mask);
    assert_eq!(mask, vec![0.0, 0.0, MASKED_LOGIT]);
}
