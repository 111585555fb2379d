// mosaic's page: the runs browser (the runs list, the compare view, a run's report).
'use strict';

(() => {
  const { $, el, api, showError, badge, count, formatReturn } = window.mosaic;

  const enc = encodeURIComponent;

  /**
   * The runs list: fetched once per visit of the tab, then sorted, filtered and selected
   * here (a row per run is built once and reordered).
   */
  const RUN_COLUMNS = [
    // [key, heading, sort value, numeric]
    ['name', 'run', (r) => r.name],
    ['experiment', 'experiment', (r) => r.experiment],
    ['env', 'env', (r) => r.env],
    ['status', 'status', (r) => r.status],
    ['episodes', 'episodes', (r) => r.done, true],
    ['started', 'started', (r) => r.started, true],
  ];
  const runsView = {
    runs: [], rows: new Map(), dir: null, maxCompared: 0, sort: 'started', descending: true, selected: new Set(),
  };

  async function loadRuns() {
    const list = $('#runs-list');
    try {
      const { runs, dir, max_compared: maxCompared } = await api('/api/runs');
      const fetched = performance.now();
      showError($('#runs-error'), '');
      runsView.runs = runs;
      runsView.dir = dir;
      runsView.maxCompared = maxCompared;
      const names = new Set(runs.map((r) => r.name));
      for (const name of runsView.selected) if (!names.has(name)) runsView.selected.delete(name);
      runsView.rows = new Map(runs.map((run, i) => [run.error ? `error:${i}` : run.name, runRow(run)]));
      renderRuns();
      // How long the list took to lay out, for the browser test's figures.
      list.dataset.renderMs = String(Math.round(performance.now() - fetched));
    } catch (error) {
      list.replaceChildren();
      $('#runs-count').textContent = '';
      showError($('#runs-error'), error.message);
    }
  }

  function runRow(run) {
    if (run.error) return el('tr', { class: 'run-error' }, el('td', { colSpan: RUN_COLUMNS.length + 1, class: 'error', text: run.error }));
    const chosen = runsView.selected.has(run.name);
    const pick = el('input', {
      type: 'checkbox',
      checked: chosen,
      'aria-label': `select ${run.name}`,
      onclick: (event) => event.stopPropagation(),
      onchange: (event) => {
        if (event.currentTarget.checked) runsView.selected.add(run.name); else runsView.selected.delete(run.name);
        event.currentTarget.closest('tr').classList.toggle('selected', event.currentTarget.checked);
        updateCompareButton();
      },
    });
    return el('tr', { 'data-run': run.name, class: chosen ? 'selected' : '', onclick: () => openRun(run.name) },
      el('td', { onclick: (event) => event.stopPropagation() }, pick),
      el('td', { class: 'mono', text: run.name }),
      el('td', { text: run.experiment }),
      el('td', { class: 'mono', text: run.env }),
      el('td', { class: `status-${run.status}`, text: run.status }),
      el('td', { class: 'num', text: `${run.done} / ${run.planned}` }),
      el('td', { class: 'num', text: startFormat.format(new Date(run.started)) }));
  }

  // One formatter for every row: formatting a date afresh each time is slow.
  const startFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });

  /**
   * The start times let through by the date fields (`from` and `to` days included, in the
   * browser's time zone): `[first, end)` in Unix milliseconds.
   */
  function startedWindow() {
    /** Midnight starting the day `value` (`YYYY-MM-DD`) plus `days`; a day is not always 24 h. */
    const midnight = (value, days = 0) => {
      if (!value) return null;
      const [y, m, d] = value.split('-').map(Number);
      return new Date(y, m - 1, d + days).getTime();
    };
    const first = midnight($('#runs-from').value);
    const end = midnight($('#runs-to').value, 1);
    return [first ?? -Infinity, end ?? Infinity];
  }

  /** The runs the filter lets through, in the chosen order; unreadable runs last. */
  function shownRuns() {
    const words = $('#runs-filter').value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const status = $('#runs-status').value;
    const [first, end] = startedWindow();
    const dated = first > -Infinity || end < Infinity;
    const [, , value, numeric] = RUN_COLUMNS.find(([key]) => key === runsView.sort);
    const direction = runsView.descending ? -1 : 1;
    const matches = (text) => words.every((w) => text.includes(w));
    const readable = runsView.runs
      .filter((r) => !r.error && (!status || r.status === status) && r.started >= first && r.started < end
        && matches(`${r.name} ${r.run_id} ${r.experiment} ${r.env}`.toLowerCase()))
      .sort((a, b) => {
        const [x, y] = [value(a), value(b)];
        const order = numeric ? x - y : String(x).localeCompare(String(y));
        return direction * order || a.name.localeCompare(b.name);
      });
    const broken = runsView.runs
      .map((r, i) => [r, i])
      .filter(([r]) => r.error && !status && !dated && matches(r.error.toLowerCase()));
    return [...readable.map((r) => runsView.rows.get(r.name)), ...broken.map(([, i]) => runsView.rows.get(`error:${i}`))];
  }

  function renderRuns() {
    const list = $('#runs-list');
    const total = runsView.runs.length;
    if (!total) {
      const dir = runsView.dir || 'DIR';
      list.replaceChildren(el('p', { class: 'empty', 'data-testid': 'no-runs' },
        `No runs in ${runsView.dir || 'the runs directory'} yet: `,
        el('code', { text: `mosaic run EXPERIMENT.toml --out ${dir}` })));
      $('#runs-count').textContent = '';
      updateCompareButton();
      return;
    }
    const rows = shownRuns();
    $('#runs-count').textContent = rows.length === total ? count(total, 'run') : `${rows.length} of ${count(total, 'run')}`;
    const headers = RUN_COLUMNS.map(([key, heading, , numeric]) => el('th', {
      class: numeric ? 'num' : '',
      'data-sort': key,
      text: heading,
      title: `sort by ${heading}`,
      'aria-sort': key === runsView.sort ? (runsView.descending ? 'descending' : 'ascending') : 'none',
      onclick: () => {
        runsView.descending = key === runsView.sort ? !runsView.descending : numeric === true;
        runsView.sort = key;
        renderRuns();
      },
    }));
    const runsTable = el('table', {},
      el('thead', {}, el('tr', {}, el('th', { text: '' }), ...headers)),
      el('tbody', {}, ...rows));
    if (rows.length) list.replaceChildren(runsTable);
    else list.replaceChildren(runsTable, el('p', { class: 'empty', 'data-testid': 'no-match', text: 'No run matches the filter.' }));
    updateCompareButton();
  }

  function updateCompareButton() {
    const n = runsView.selected.size;
    const button = $('#runs-compare');
    const most = runsView.maxCompared;
    button.disabled = n === 0 || n > most;
    button.textContent = n === 1 ? 'Compare operators of the selected run'
      : n > most ? `Select at most ${most} runs to compare` : `Compare selected (${n})`;
  }

  $('#runs-filter').addEventListener('input', renderRuns);
  $('#runs-status').addEventListener('change', renderRuns);
  for (const field of ['#runs-from', '#runs-to']) $(field).addEventListener('input', renderRuns);
  $('#runs-compare').addEventListener('click', () => openCompare([...runsView.selected]));

  /**
   * The compare view: several runs, each against the first selected (in list order), or
   * two operators of one run picked here. The statistics are the server's (the recorder's
   * paired comparisons); this page only lays them out.
   */
  function openCompare(names) {
    const order = new Map(runsView.runs.map((r, i) => [r.name, i]));
    names.sort((a, b) => order.get(a) - order.get(b));
    $('#compare').hidden = false;
    $('#compare-table').replaceChildren();
    $('#compare-notes').textContent = '';
    showError($('#compare-error'), '');
    const picker = $('#compare-operators');
    if (names.length !== 1) {
      picker.hidden = true;
      $('#compare-title').textContent = `Compare ${names.join(', ')} (against ${names[0]}, paired by seed)`;
      showCompare(`runs=${names.map(enc).join(',')}`);
      return;
    }
    const [name] = names;
    const operators = (runsView.runs.find((r) => r.name === name) || {}).operators || [];
    $('#compare-title').textContent = `Compare operators of ${name} (paired by seed)`;
    if (operators.length < 2) {
      picker.hidden = true;
      showError($('#compare-error'), `Run ${name} has ${count(operators.length, 'operator')}: select two runs to compare, or a run with two operators or more.`);
      return;
    }
    const select = (id, chosen) => el('select', { id, 'aria-label': id === 'compare-a' ? 'operator A' : 'operator B' },
      ...operators.map((op) => el('option', { value: op, text: op, selected: op === chosen })));
    const a = select('compare-a', operators[0]);
    const b = select('compare-b', operators[1]);
    const go = () => showCompare(`runs=${enc(name)}&operators=${enc(a.value)},${enc(b.value)}`);
    picker.replaceChildren('A ', a, ' B ', b, el('button', { text: 'Compare', onclick: go }));
    picker.hidden = false;
    go();
  }

  async function showCompare(query) {
    const tableNode = $('#compare-table');
    try {
      const answer = await api(`/api/compare?${query}`);
      showError($('#compare-error'), '');
      tableNode.replaceChildren(compareTable(answer.paired));
      const notes = answer.paired.flatMap(unpairedNotes);
      if (answer.unmatched_operators.length) notes.push(`not compared (in one run only): ${answer.unmatched_operators.join(', ')}`);
      $('#compare-notes').textContent = notes.join(' · ');
    } catch (error) {
      tableNode.replaceChildren();
      showError($('#compare-error'), error.message);
    }
    $('#compare').scrollIntoView({ block: 'nearest' });
  }

  /** One row per comparison's return, then one per team's win rate (in percentage points). */
  function compareTable(paired) {
    const rows = paired.flatMap((c) => [
      compareRow(c, 'return', c.returns, 1, ''),
      ...c.win_rates.map(([team, w]) => compareRow(c, `win rate ${team}`, w, 100, ' pp')),
    ]);
    return table([['A'], ['B'], ['measure'], ['A', 1], ['B', 1], ['B − A', 1], ['95% CI', 1],
      ['B > A / = / <', 1], ['p', 1], ['seeds', 1], ['seeds needed', 1]], rows);
  }

  function compareRow(c, measure, comparison, scale, unit) {
    const d = comparison.difference;
    const cells = [
      el('td', { class: 'mono', text: c.a }), el('td', { class: 'mono', text: c.b }), el('td', { text: measure }),
    ];
    if (!d) {
      cells.push(el('td', { colSpan: 8, class: 'empty', text: 'no seeds in common' }));
    } else {
      const x = (v) => formatNumber(v * scale, 3);
      const signed = (v) => `${v >= 0 ? '+' : ''}${x(v)}`;
      const significant = d.test.p_value < 0.05;
      cells.push(
        el('td', { class: 'num', text: x(d.mean_a) }),
        el('td', { class: 'num', text: x(d.mean_b) }),
        el('td', { class: `num${significant ? ' significant' : ''}`, 'data-col': 'difference', text: `${signed(d.difference.mean)}${unit}` }),
        el('td', { class: 'num', 'data-col': 'interval', text: `[${signed(d.difference.low)}, ${signed(d.difference.high)}]` }),
        el('td', { class: 'num', text: `${d.b_higher} / ${d.ties} / ${d.a_higher}` }),
        el('td', { class: 'num', 'data-col': 'p', title: d.test.exact ? 'exact sign-flip test' : 'sign-flip test (random sign patterns)', text: formatP(d.test.p_value) }),
        el('td', { class: 'num', text: comparison.paired_seeds }),
        el('td', {
          class: 'num',
          'data-col': 'seeds-needed',
          title: `seeds a paired test needs to detect the observed difference (α = 0.05, power 0.8); with ${comparison.paired_seeds} seeds it detects ${x(d.power.detectable)}${unit}`,
          text: d.power.seeds_for_observed == null ? '–' : d.power.seeds_for_observed,
        }));
    }
    return el('tr', { 'data-compare': `${c.a}|${c.b}|${measure}` }, ...cells);
  }

  const formatP = (p) => (p < 0.001 ? '< 0.001' : p.toFixed(3));

  function unpairedNotes(c) {
    const r = c.returns;
    if (!r.only_in_a.length && !r.only_in_b.length) return [];
    return [`${c.a} vs ${c.b}: ${r.only_in_a.length} seeds in A only, ${r.only_in_b.length} in B only (not paired)`];
  }

  function table(headers, rows) {
    return el('table', {},
      el('thead', {}, el('tr', {}, ...headers.map(([text, num]) => el('th', { class: num ? 'num' : '', text })))),
      el('tbody', {}, ...rows));
  }

  const formatNumber = (x, digits = 2) => (x == null ? '–' : Number(x).toFixed(digits));

  /** Episodes ended before their end by the person (Reset All) or by the server stopping. */
  const abandoned = (e) => Boolean(e.error && e.error.startsWith('abandoned'));
  const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

  /**
   * The figures of an operator's abandoned episodes, which the report leaves out of its
   * averages: mean length, and mean return per operator, per team (the sum of its agents'
   * returns in an episode, as the report counts it) and per agent; and who played each
   * team and agent (`paradigm/kind`, as the report writes it).
   */
  function partialFigures(episodes) {
    const returns = new Map();
    const teamReturns = new Map();
    const who = new Map();
    const push = (map, key, value) => map.set(key, [...(map.get(key) || []), value]);
    const played = (group, a) => {
      const names = who.get(group) || [];
      const name = `${a.paradigm}/${a.kind}`;
      if (!names.includes(name)) who.set(group, [...names, name]);
    };
    for (const e of episodes) {
      const teams = new Map();
      for (const a of e.agents) {
        push(returns, a.agent_id, a.total_reward);
        played(`agent:${a.agent_id}`, a);
        if (a.team == null) continue;
        teams.set(a.team, (teams.get(a.team) || 0) + a.total_reward);
        played(`team:${a.team}`, a);
      }
      for (const [team, total] of teams) push(teamReturns, team, total);
    }
    const means = (map) => new Map([...map].map(([name, xs]) => [name, mean(xs)]));
    return {
      count: episodes.length,
      length: mean(episodes.map((e) => e.steps)),
      operator: mean(episodes.map((e) => e.agents.reduce((sum, a) => sum + a.total_reward, 0))),
      teams: means(teamReturns),
      agents: means(returns),
      who,
    };
  }

  const GROUP_ORDER = { operator: 0, team: 1, agent: 2 };

  /**
   * The report's groups, with a row for each team and agent seen only in abandoned
   * episodes (the report counts finished episodes only), in the report's order.
   */
  function groupsWithPartial(groups, partial) {
    if (!partial) return groups;
    const missing = (kind, names) => [...names.keys()]
      .filter((name) => !groups.some((g) => g.kind === kind && g.name === name))
      .map((name) => ({ kind, name, who: partial.who.get(`${kind}:${name}`).join(', '), mean_return: null, outcomes: null, llm: null }));
    return [...groups, ...missing('team', partial.teams), ...missing('agent', partial.agents)]
      .sort((a, b) => (GROUP_ORDER[a.kind] ?? 3) - (GROUP_ORDER[b.kind] ?? 3));
  }

  /** One operator's section of the recorder's report (`episodes`: the operator's records). */
  function operatorReport(op, episodes) {
    const left = episodes.filter(abandoned);
    const partial = left.length ? partialFigures(left) : null;
    /** A group's mean return: the report's, else that of its abandoned episodes (marked). */
    const partialMean = (g) => {
      if (!partial) return null;
      const value = g.kind === 'operator' ? partial.operator
        : g.kind === 'team' ? partial.teams.get(g.name) : partial.agents.get(g.name);
      return value == null ? null : `${formatNumber(value, 3)} (partial)`;
    };
    const groups = groupsWithPartial(op.groups, partial);
    const withLlm = groups.some((g) => g.llm);
    const headers = [['group'], ['name'], ['who'], ['mean return', 1], ['95% CI', 1], ['W / D / L', 1]];
    if (withLlm) headers.push(['parsed', 1], ['tokens in / out', 1], ['messages', 1]);
    const rows = groups.map((g) => {
      const ci = g.mean_return;
      const paradigm = g.kind === 'agent' ? g.who.split('/')[0] : null;
      const cells = [
        el('td', { class: `group-${g.kind}`, text: g.kind }),
        el('td', { class: 'mono' }, paradigm ? badge(paradigm) : null, paradigm ? ' ' : null, g.name),
        el('td', { class: 'muted', text: g.who }),
        el('td', { class: 'num', text: ci ? formatNumber(ci.mean, 3) : partialMean(g) || '–' }),
        el('td', { class: 'num', text: ci ? `[${formatNumber(ci.low, 3)}, ${formatNumber(ci.high, 3)}]` : '–' }),
        el('td', { class: 'num', text: g.outcomes ? `${g.outcomes.wins} / ${g.outcomes.draws} / ${g.outcomes.losses}` : '–' }),
      ];
      if (withLlm) {
        const l = g.llm;
        cells.push(
          el('td', { class: 'num', text: l && l.parses ? `${((100 * l.parse_ok) / l.parses).toFixed(1)}%` : '–' }),
          el('td', { class: 'num', text: l ? `${l.prompt_tokens} / ${l.completion_tokens}` : '–' }),
          el('td', { class: 'num', text: l ? l.messages : '–' }));
      }
      return el('tr', { 'data-group': `${g.kind}:${g.name}` }, ...cells);
    });
    const metrics = Object.entries(op.metrics || {});
    const intervals = op.metric_intervals || {};
    /** `base_pct 4.200 [3.700, 4.700]`: the mean with its 95% interval when the report has one. */
    const metricText = ([k, v]) => {
      const ci = intervals[k];
      return ci ? `${k} ${formatNumber(v, 3)} [${formatNumber(ci.low, 3)}, ${formatNumber(ci.high, 3)}]` : `${k} ${formatNumber(v, 3)}`;
    };
    return el('section', { class: 'operator-report', 'data-operator': op.operator_id },
      el('h4', {}, el('span', { class: 'mono', text: op.operator_id }),
        el('span', { class: 'muted', text: ` · ${op.env} · ${episodeSummary(op, left.length)} · mean length ${
          op.mean_length != null || !partial ? formatNumber(op.mean_length, 1) : `${formatNumber(partial.length, 1)} (partial)`} · ${formatNumber(op.steps_per_s, 0)} steps/s` })),
      table(headers, rows),
      metrics.length ? el('p', { class: 'metrics', text: `metrics (mean [95% CI]): ${metrics.map(metricText).join(', ')}` }) : null);
  }

  /** `3 episodes (1 abandoned, 1 failed)`: abandoned ones are not failures of anybody. */
  function episodeSummary(op, abandonedCount) {
    const failed = op.failed - abandonedCount;
    const notes = [abandonedCount ? `${abandonedCount} abandoned` : null, failed > 0 ? `${failed} failed` : null].filter(Boolean);
    return `${count(op.episodes, 'episode')}${notes.length ? ` (${notes.join(', ')})` : ''}`;
  }

  /**
   * The run's charts (drawn once the run is on show: they take its width), or why there
   * are none; a training run's curves come first.
   */
  async function showCharts(name) {
    const box = $('#run-plots');
    box.replaceChildren();
    try {
      const charts = await api(`/api/runs/${enc(name)}/charts`);
      if ($('#run-detail').dataset.run !== name) return;
      const { lineChart, reportCharts } = window.mosaic.charts;
      if (charts.training) {
        box.append(el('h4', { text: 'Training curves (against environment steps)' }));
        if (!charts.training.some((c) => c.series.some((s) => s.points.length))) {
          box.append(el('p', { class: 'empty', 'data-testid': 'no-training', text: 'No update of this training run is recorded yet.' }));
        }
        for (const chart of charts.training.filter((c) => c.series.some((s) => s.points.length))) {
          lineChart(box, {
            id: chart.id, title: chart.title, xLabel: 'step', yLabel: chart.y_label, series: chart.series,
            smoothing: chart.id !== 'learning_rate',
          });
        }
        box.append(el('h4', { text: 'Return per training episode' }));
      }
      if (!charts.returns.some((s) => s.points.length)) {
        box.append(el('p', { class: 'empty', 'data-testid': 'no-plots', text: 'Nothing to plot yet: no episode of this run has ended on its own (abandoned and failed episodes are not plotted).' }));
        return;
      }
      reportCharts(box, charts.returns);
    } catch (error) {
      box.replaceChildren(el('p', { class: 'error', role: 'alert', text: `Charts: ${error.message}` }));
    }
  }

  async function openRun(name) {
    window.mosaic.viewer.close();
    try {
      const run = await api(`/api/runs/${enc(name)}`);
      showError($('#runs-error'), '');
      $('#run-detail').hidden = false;
      $('#run-detail').dataset.run = name;
      $('#run-title').textContent = `${run.experiment.name} — ${run.run_id}`;
      $('#run-meta').textContent = `${run.status} · ${run.done} / ${run.planned} episodes · started ${new Date(run.started).toLocaleString()}`;
      $('#run-report').replaceChildren(...run.report.operators.map((op) =>
        operatorReport(op, run.episodes.filter((e) => e.operator_id === op.operator_id))));
      showCharts(name);
      $('#run-episodes').replaceChildren(table(
        [['operator'], ['episode', 1], ['seed', 1], ['steps', 1], ['returns'], ['end'], ['']],
        run.episodes.map((e) => el('tr', { 'data-episode': `${e.operator_id}/${e.episode_index}` },
          el('td', { class: 'mono', text: e.operator_id }),
          el('td', { class: 'num', text: e.episode_index }), el('td', { class: 'num', text: e.seed }),
          el('td', { class: 'num', text: e.steps }),
          el('td', { class: 'mono', text: e.agents.map((a) => `${a.agent_id} ${formatReturn(a.total_reward)}`).join(', ') }),
          el('td', { text: abandoned(e) ? e.error : e.error ? `error: ${e.error}` : e.terminated ? 'terminated' : e.truncated ? 'truncated' : '' }),
          el('td', {}, el('button', {
            class: 'replay-button',
            text: 'Replay',
            onclick: (event) => window.mosaic.viewer.open(name, e.operator_id, e.episode_index, event.currentTarget.closest('tr')),
          }))))));
    } catch (error) {
      showError($('#runs-error'), error.message);
    }
  }

  window.mosaic.runs = { load: loadRuns, open: openRun };
})();
