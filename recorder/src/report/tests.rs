use super::render::restarts_markdown;
use super::*;
use crate::synthetic;
use mosaic_core::record::RestartRecord;

fn report(operators: &[&str]) -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("rep", operators, 8, 40);
    let (run, store) = synthetic::write_run(&dir.path().join("rep"), &manifest, 30, 4).unwrap();
    let report = build(&run, &Records::Store(Box::new(store))).unwrap();
    (dir, report)
}

#[test]
fn steps_per_second_comes_from_full_resolution_episode_times() {
    let unit = synthetic::UnitSpec {
        run_id: "r".into(),
        operator_id: "a".into(),
        episode_index: 0,
        seed: 1,
    };
    let episode = |steps: u32, steps_per_s: f64| {
        let mut record = synthetic::episode(&unit, steps, 1).record;
        record.steps = steps;
        record.steps_per_s = steps_per_s;
        record.duration_ms = (f64::from(steps) * 1000.0 / steps_per_s) as u64;
        record
    };
    // Episodes shorter than a millisecond: whole milliseconds would say 0 ms.
    let fast = [episode(30, 600_000.0), episode(30, 300_000.0)];
    let fast: Vec<&EpisodeRecord> = fast.iter().collect();
    assert!(fast.iter().all(|e| e.duration_ms == 0));
    let rate = steps_per_second(fast.iter().copied()).unwrap();
    assert!((rate - 400_000.0).abs() < 1e-6, "{rate}");
    assert_eq!(fmt_rate(Some(rate)), "400000");
    // An LLM decider: well under one step per second, not shown as 0.
    let slow = [episode(25, 0.62)];
    let slow: Vec<&EpisodeRecord> = slow.iter().collect();
    assert_eq!(fmt_rate(steps_per_second(slow.iter().copied())), "0.620");
    assert_eq!(steps_per_second([]), None);
}

#[test]
fn control_characters_from_models_are_printed_escaped() {
    let (_dir, mut report) = report(&["a"]);
    let hostile = "clear\u{1b}[2J title\u{1b}]0;pwned\u{7} nul\u{0} back\r";
    report.operators[0].operator_id = format!("op{hostile}");
    report.errors.push(agents::ErrorGroup {
        operator_id: "a".into(),
        agent_id: Some("green_0".into()),
        kind: agents::ErrorKind::Decision,
        count: 1,
        first_episode: 0,
        first_step: Some(0),
        first_message: hostile.into(),
    });
    for format in [Format::Markdown, Format::Csv] {
        let text = report.render(format);
        let raw: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && !matches!(c, '\n' | '\t'))
            .collect();
        assert!(raw.is_empty(), "{format:?} printed {raw:?}");
        assert!(text.contains("clear\\u{1b}[2J"), "{format:?}: {text}");
        assert!(text.contains("nul\\u{0} back\\u{d}"), "{format:?}");
    }
    // JSON escapes them itself, and keeps the text exact.
    let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(json["errors"][0]["first_message"], hostile);
}

#[test]
fn restarts_are_counted_per_child_from_the_episode_records() {
    let restart = |child: &str, recovered: bool, ms: u64, diverged: bool| RestartRecord {
        child: child.into(),
        step_index: 3,
        failure: format!("{child} | died"),
        recovery: String::new(),
        recovered,
        diverged: diverged.then(|| "step 2".to_owned()),
        recovery_ms: ms,
        timestamp: 0,
    };
    let unit = synthetic::UnitSpec {
        run_id: "r".into(),
        operator_id: "a".into(),
        episode_index: 0,
        seed: 1,
    };
    let mut first = synthetic::episode(&unit, 5, 2).record;
    first.restarts = vec![
        restart("env", true, 100, false),
        restart("green_0", true, 40, true),
    ];
    let mut second = first.clone();
    second.restarts = vec![
        restart("env", true, 300, false),
        restart("env", false, 999, false),
    ];
    let stats = restart_stats(&[&first, &second]);
    assert_eq!(stats.len(), 2);
    assert_eq!(
        (
            stats[0].child.as_str(),
            stats[0].failures,
            stats[0].recovered
        ),
        ("env", 3, 2)
    );
    assert_eq!(
        stats[0].mean_recovery_ms, 200.0,
        "escalations are not averaged"
    );
    assert_eq!(stats[0].max_recovery_ms, 300);
    assert_eq!((stats[1].child.as_str(), stats[1].diverged), ("green_0", 1));
    let table = restarts_markdown(&stats);
    assert!(
        table.contains("| env | 3 | 2 | 0 | 200 | 300 | env \\| died |"),
        "{table}"
    );
    assert!(restarts_markdown(&[]).is_empty());
}

#[test]
fn figures_trace_back_to_the_records() {
    let (_dir, report) = report(&["a", "b"]);
    let manifest = synthetic::manifest("rep", &["a", "b"], 8, 40);
    let episodes = synthetic::run_episodes(&manifest, 30, 4);
    let a = &report.operators[0];
    assert_eq!((a.operator_id.as_str(), a.episodes, a.failed), ("a", 8, 0));
    assert_eq!(a.mean_length, Some(30.0));
    let returns: Vec<f64> = episodes[..8]
        .iter()
        .map(|e| e.record.agents.iter().map(|a| a.total_reward).sum())
        .collect();
    let mean = returns.iter().sum::<f64>() / 8.0;
    let all = &a.groups[0];
    assert_eq!(all.kind, GroupKind::Operator);
    assert!((all.mean_return.unwrap().mean - mean).abs() < 1e-12);
    // Teams: green and blue; agents: four.
    let kinds: Vec<_> = a.groups.iter().map(|g| (g.kind, g.name.as_str())).collect();
    assert_eq!(
        kinds[1..3],
        [(GroupKind::Team, "blue"), (GroupKind::Team, "green")]
    );
    assert_eq!(kinds.len(), 7);
    let green = &a.groups[2];
    assert_eq!(green.outcomes.total(), 8);
    // LLM figures: agent green_0, from the decisions of its step records.
    let prompt: u64 = episodes[..8]
        .iter()
        .flat_map(|e| e.steps.iter().map(|s| &s[0]))
        .map(|r| {
            r.decision.as_ref().unwrap()["usage"]["prompt_tokens"]
                .as_u64()
                .unwrap()
        })
        .sum();
    let green_0 = a.groups.iter().find(|g| g.name == "green_0").unwrap();
    assert_eq!(green_0.llm.unwrap().prompt_tokens, prompt);
    assert_eq!(green_0.llm.unwrap().decisions, 8 * 30);
    assert_eq!(green.llm.unwrap().prompt_tokens, prompt);
    assert_eq!(all.llm.unwrap().completion_tokens, 8 * 30 * 12);
    assert!(
        a.groups
            .iter()
            .find(|g| g.name == "blue_0")
            .unwrap()
            .llm
            .is_none()
    );
    assert!(a.metrics.contains_key("goals"));
    // Every metric has its stratified bootstrap interval around the same mean.
    assert_eq!(
        a.metric_intervals.keys().collect::<Vec<_>>(),
        a.metrics.keys().collect::<Vec<_>>()
    );
    for (name, mean) in &a.metrics {
        let values: Vec<(u64, f64)> = episodes[..8]
            .iter()
            .map(|e| (e.record.seed, e.record.metrics[name].as_f64().unwrap()))
            .collect();
        let ci = a.metric_intervals[name];
        assert_eq!(Some(ci), crate::stats::bootstrap_mean(&values), "{name}");
        assert!((ci.mean - mean).abs() < 1e-12, "{name}");
        assert!(ci.low <= ci.mean && ci.mean <= ci.high, "{name}");
        assert_eq!(ci.n, 8);
    }
    let possession = a.metric_intervals["possession"];
    assert!(possession.low < possession.high, "{possession:?}");
}

#[test]
fn renders_are_complete_and_reproducible() {
    let (dir, report) = report(&["a", "b"]);
    let (_, again) = self::report(&["a", "b"]);
    assert_eq!(report.operators, again.operators);
    let md = report.render(Format::Markdown);
    assert!(md.contains("## Side by side"), "{md}");
    assert!(md.contains("| team green: win / draw / loss |"), "{md}");
    assert!(md.contains("## Operator `b`"), "{md}");
    // Operators share seeds: b is compared with a seed by seed (the synthetic episodes
    // depend on the seed only, so every difference is zero).
    assert!(md.contains("## Paired by seed"), "{md}");
    assert!(md.contains("| return | "), "{md}");
    assert!(md.contains("8 seeds paired."), "{md}");
    // Every metric row carries its interval, in every format.
    let possession = report.operators[0].metric_intervals["possession"];
    let row = format!(
        "| possession | {:.3} [{:.3}, {:.3}] |",
        possession.mean, possession.low, possession.high
    );
    assert!(md.contains("| metric | mean [95% CI] |"), "{md}");
    assert!(md.contains(&row), "{md}");
    assert!(md.contains("| metric possession [95% CI] |"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(json["operators"][1]["episodes"], 8);
    let interval = &json["operators"][0]["metric_intervals"]["possession"];
    assert_eq!(interval["low"], possession.low);
    assert_eq!(interval["high"], possession.high);
    assert_eq!(interval["n"], 8);
    // The means stay where they were.
    assert_eq!(
        json["operators"][0]["metrics"]["possession"],
        possession.mean
    );
    let csv = report.render(Format::Csv);
    assert!(
        csv.contains(&format!("a,metric,possession,ci_low,{}\n", possession.low)),
        "{csv}"
    );
    assert!(csv.lines().all(|l| l.split(',').count() == 5), "{csv}");
    assert!(csv.contains("a,team,green,win_rate,"), "{csv}");
    assert!(csv.contains("b,paired,return vs a,difference,0\n"), "{csv}");
    assert_eq!(json["paired"][0]["returns"]["paired_seeds"], 8);
    let (_, single) = self::report(&["solo"]);
    assert!(!single.render(Format::Markdown).contains("Side by side"));
    let plots = crate::plot::write_plots(&report, &dir.path().join("plots")).unwrap();
    for plot in plots {
        let svg = std::fs::read_to_string(&plot).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("</svg>"),
            "{}",
            plot.display()
        );
        // Each operator is named (legend or panel caption).
        for operator in ["a", "b"] {
            assert!(
                svg.contains(&format!("\n{operator}\n</text>")),
                "{}",
                plot.display()
            );
        }
    }
}

#[test]
fn matrix_and_aggregates_come_from_the_episodes() {
    let (_dir, report) = report(&["a", "b"]);
    let manifest = synthetic::manifest("rep", &["a", "b"], 8, 40);
    let episodes = synthetic::run_episodes(&manifest, 30, 4);
    let matrix = report.matrix.as_ref().unwrap();
    // Green (agent 0's team) is team A; it plays an LLM and a random agent.
    assert_eq!(
        (matrix.row_team.as_str(), matrix.column_team.as_str()),
        ("green", "blue")
    );
    assert_eq!(
        (matrix.rows.clone(), matrix.columns.clone()),
        (vec!["llm+random".to_owned()], vec!["random".to_owned()])
    );
    assert_eq!(matrix.cells.len(), 2);
    let green_wins = episodes[..8]
        .iter()
        .filter(|e| e.record.agents[0].outcome == Some(mosaic_core::Outcome::Win))
        .count();
    let cell = &matrix.cells[0];
    assert_eq!((cell.operator_id.as_str(), cell.episodes), ("a", 8));
    assert!((cell.win.unwrap().mean - green_wins as f64 / 8.0).abs() < 1e-12);
    let rates = cell.win.unwrap().mean + cell.draw.unwrap().mean + cell.loss.unwrap().mean;
    assert!((rates - 1.0).abs() < 1e-12);
    let md = matrix.render(Format::Markdown);
    assert!(md.contains("| green \\ blue | random |"), "{md}");
    assert!(md.contains("| **llm+random** | `a` (8 ep.): W "), "{md}");
    let csv = matrix.render(Format::Csv);
    assert!(csv.contains("llm+random,random,b,win_rate,"), "{csv}");

    // Aggregates: a seed per episode here, so the mean is the operator's mean return.
    let aggregates = &report.aggregates;
    assert_eq!(aggregates.len(), 2);
    let mean = report.operators[0].groups[0].mean_return.unwrap().mean;
    assert!((aggregates[0].aggregates.mean.point - mean).abs() < 1e-12);
    assert_eq!(aggregates[0].improvement_over_first, None);
    // b's episodes are a's (same seeds): it is better half the time.
    assert_eq!(aggregates[1].improvement_over_first.unwrap().point, 0.5);
    let full = report.render(Format::Markdown);
    assert!(full.contains("## Aggregates (rliable)"), "{full}");
}

#[test]
fn runs_side_by_side_are_labelled_by_experiment_and_operator() {
    let dir = tempfile::tempdir().unwrap();
    let write = |run_id: &str, operators: &[&str]| {
        let manifest = synthetic::manifest(run_id, operators, 6, 40);
        let (run, store) =
            synthetic::write_run(&dir.path().join(run_id), &manifest, 20, 4).unwrap();
        drop(store);
        synthetic::wait_for_unlock(&run.store_path()).unwrap();
        run
    };
    // "synthetic x" twice (labelled by run id), "synthetic a vs b" once (by operator).
    let runs = [
        write("first", &["x"]),
        write("second", &["x"]),
        write("pair", &["a", "b"]),
    ];
    let both = side_by_side::side_by_side(&runs).unwrap();
    // Synthetic episodes report no difficulty.
    assert_eq!(both.difficulty, None);
    let table = both.configurations.unwrap();
    let labels: Vec<&str> = table.cells.iter().map(|c| c.operator_id.as_str()).collect();
    assert_eq!(
        labels,
        [
            "first",
            "second",
            "synthetic a vs b/a",
            "synthetic a vs b/b"
        ]
    );
    // The same episodes give the same cells whatever the run.
    let (one, two) = (&table.cells[0], &table.cells[1]);
    assert_eq!((one.win, one.row_return), (two.win, two.row_return));
    assert_eq!(one.episodes, 6);
    let md = table.render_rows(Format::Markdown);
    assert!(
        md.contains("| configuration | green plays | blue plays | episodes |"),
        "{md}"
    );
    assert!(
        md.contains("| `first` | llm+random | random | 6 | "),
        "{md}"
    );
    assert_eq!(md.matches("\n| `").count(), 4, "{md}");
    // JSON and CSV are the matrix's.
    assert_eq!(table.render_rows(Format::Json), table.render(Format::Json));
}

#[test]
fn requests_count_http_attempts_and_fall_back_to_re_prompts() {
    let mut stats = LlmStats::default();
    // Two re-prompts, and one of the three requests needed a second HTTP attempt.
    let decision =
        |json: &'static str| serde_json::from_str::<step_fields::DecisionFields>(json).unwrap();
    assert!(stats.add_decision(&decision(r#"{"retries": 2, "http_attempts": 4}"#)));
    assert_eq!(stats.requests, 4);
    // A record written before `http_attempts` existed: one request plus its re-prompts.
    assert!(stats.add_decision(&decision(r#"{"retries": 1}"#)));
    assert_eq!(stats.requests, 6);
    assert_eq!(stats.retries, 3);
}

/// A run whose decisions exercise every way the report reads them: escaped text, fields
/// of the wrong type, details that are no object, nested usage, format errors whose last
/// entry is no text, timeouts, decision and episode errors, notes that change.
fn varied_run(path: &std::path::Path) -> (RunDir, crate::RunStore) {
    use mosaic_core::DecisionSource;
    use serde_json::json;
    let manifest = synthetic::manifest("varied", &["a", "b"], 3, 21);
    let (run, store) = RunDir::create(path, &manifest).unwrap();
    let mut writer = run.writer(&store, crate::Durability::Flush).unwrap();
    let mut episodes = synthetic::run_episodes(&manifest, 14, 4);
    for (e, episode) in episodes.iter_mut().enumerate() {
        for (s, step) in episode.steps.iter_mut().enumerate() {
            let green = &mut step[0];
            let decision = match (s + e) % 12 {
                0 => Some(json!({
                    "message": "naïve \"quoted\" \\ text\nnext",
                    "message_to": "blue_0",
                    "scratchpad": "plan é",
                    "received": 2,
                    "usage": {"prompt_tokens": 40, "completion_tokens": 4},
                    "parse_ok": true,
                })),
                1 => Some(json!({
                    "usage": "many",
                    "parse_ok": "yes",
                    "retries": -1,
                    "latency_ms": 12.5,
                    "cache_hits": 3,
                    "http_attempts": 2,
                    "message": 7,
                })),
                2 => Some(json!("just text")),
                3 => None,
                4 => {
                    green.decision_source = Some(DecisionSource::Error);
                    Some(json!({"format_errors": ["no action", 3], "retries": 1}))
                }
                5 => {
                    green.decision_source = Some(DecisionSource::Error);
                    Some(json!({"error": "boom | \u{1} \"here\"", "format_errors": ["x"]}))
                }
                6 => {
                    green.decision_source = Some(DecisionSource::Timeout);
                    None
                }
                7 => Some(json!({"message": null, "scratchpad": null, "received": 0})),
                8 => Some(json!({
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "extra": {"deep": [1, 2, {"x": "y"}]}},
                    "scratchpad": "plan é",
                    "message": "",
                    "latency_ms": 30,
                })),
                9 => Some(json!({"scratchpad": "plan B", "received": 3, "retries": 2})),
                10 => {
                    green.decision_source = Some(DecisionSource::Error);
                    Some(json!({"format_errors": ["first", "the last \u{7f}"]}))
                }
                _ => green.decision.take(),
            };
            green.decision = decision;
            let blue = &mut step[1];
            if s == 3 {
                blue.decision_source = Some(DecisionSource::Timeout);
                blue.decision = Some(json!({"error": "late"}));
            }
            if s == 10 {
                blue.decision = Some(json!({"message": "hi", "message_to": 5}));
            }
            if s == 11 {
                blue.decision_source = Some(DecisionSource::Error);
            }
        }
        if e == 4 {
            episode.record.error = Some("environment synthetic: boom".into());
        }
    }
    synthetic::record_episodes(&mut writer, &episodes, 0).unwrap();
    writer.close().unwrap();
    (run, store)
}

/// Every render of `report`, the run's directory left out.
fn renders(report: &Report, dir: &std::path::Path) -> String {
    let json = report
        .render(Format::Json)
        .replace(&dir.display().to_string(), "RUN");
    [
        report.render(Format::Markdown),
        report.render(Format::Csv),
        json,
    ]
    .join("\n----\n")
}

#[test]
fn renders_the_varied_run_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("varied");
    let (run, store) = varied_run(&path);
    let from_store = build(&run, &Records::Store(Box::new(store))).unwrap();
    synthetic::wait_for_unlock(&path.join("store")).unwrap();
    let from_logs = build(&run, &run.records().unwrap()).unwrap();
    assert!(matches!(
        run.records().unwrap(),
        Records::Logs { writing: false, .. }
    ));
    let expected = include_str!("testdata/varied-run.txt");
    for (source, report) in [("store", from_store), ("logs", from_logs)] {
        let actual = renders(&report, dir.path());
        assert!(actual == expected, "from the {source}:\n{actual}");
    }
}
