// mosaic's page: manual mode (live viewports) and the runs browser. Plain JavaScript, no
// build step: the server embeds this file as is.
'use strict';

(() => {
  // Access: with a token, the server logged this browser in with a cookie, which every
  // request of the page carries; no address here holds the token.

  const $ = (selector, root = document) => root.querySelector(selector);
  const el = (tag, props = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props)) {
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key.startsWith('data-') || key.startsWith('aria-')) node.setAttribute(key, value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node[key] = value;
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  };

  const MAX_FRAME_WIDTH = 720;

  /**
   * Fills the room available: at a whole multiple of the frame's size when that is at
   * least twice (crisp cells), else scaled smoothly.
   */
  function fitFrame(img, room) {
    const natural = img.naturalWidth;
    if (!natural || !room) return;
    const fill = Math.min(room, MAX_FRAME_WIDTH) / natural;
    const scale = fill >= 2 ? Math.floor(fill) : fill;
    img.style.width = `${Math.round(natural * scale)}px`;
    img.classList.toggle('smooth', !Number.isInteger(scale));
  }

  async function api(path, body) {
    const options = { headers: {} };
    if (body !== undefined) {
      options.method = 'POST';
      options.headers['Content-Type'] = 'application/json';
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    let data = null;
    try { data = await response.json(); } catch (_) { /* not JSON */ }
    if (!response.ok) {
      const error = new Error((data && data.error) || `${response.status} ${response.statusText}`);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  const showError = (node, message) => {
    node.textContent = message || '';
    node.hidden = !message;
  };

  const BASELINES = new Set(['scripted', 'random', 'noop', 'external']);
  const badge = (paradigm) =>
    el('span', { class: `badge ${paradigm}${BASELINES.has(paradigm) ? ' baseline' : ''}`, text: paradigm });
  /** `1 episode`, `2 episodes`. */
  const count = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const formatReturn = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(2));

  // ---- tabs -------------------------------------------------------------------------------
  function selectTab(name) {
    for (const tab of document.querySelectorAll('.tab')) {
      tab.setAttribute('aria-selected', String(tab.dataset.tab === name));
    }
    for (const panel of document.querySelectorAll('.panel')) panel.hidden = panel.dataset.panel !== name;
    if (name === 'runs') loadRuns();
  }
  for (const tab of document.querySelectorAll('.tab')) {
    tab.addEventListener('click', () => selectTab(tab.dataset.tab));
  }

  // ---- live: manual mode ------------------------------------------------------------------
  const KEY_LABELS = {
    ArrowLeft: ['left', 'west', 'move_left', 'turn_left'],
    ArrowRight: ['right', 'east', 'move_right', 'turn_right'],
    ArrowUp: ['up', 'forward', 'north', 'move_up'],
    ArrowDown: ['down', 'backward', 'back', 'south', 'move_down'],
    ' ': ['noop', 'stay', 'wait', 'pass', 'none'],
    p: ['pickup', 'pick_up'],
    d: ['drop'],
    t: ['toggle'],
  };
  const KEY_NAMES = { ArrowLeft: '←', ArrowRight: '→', ArrowUp: '↑', ArrowDown: '↓', ' ': 'Space' };
  /** Labels of the moves of an agent that turns and goes forward. */
  const FORWARD = ['forward'];
  const TURN_LEFT = ['left', 'turn_left'];
  const TURN_RIGHT = ['right', 'turn_right'];
  /** The arrows clockwise, and the arrow of each way an agent can face on the picture. */
  const CLOCKWISE = ['ArrowUp', 'ArrowRight', 'ArrowDown', 'ArrowLeft'];
  const FACING_ARROW = { up: 'ArrowUp', right: 'ArrowRight', down: 'ArrowDown', left: 'ArrowLeft' };
  /**
   * How arrow keys move an agent that turns and goes forward: `relative` (↑ forward, ← →
   * turn) or `screen` (an arrow turns it to face that way on the picture, or moves it
   * forward when it already does). Remembered in this browser.
   */
  const ARROW_MODE_KEY = 'mosaic.arrows';
  let arrowMode = (() => {
    try { return localStorage.getItem(ARROW_MODE_KEY) === 'screen' ? 'screen' : 'relative'; } catch (_) { return 'relative'; }
  })();

  let setup = null;
  let latest = null;
  const views = new Map(); // operator id -> DOM handles
  let appliedNextSeed = null;

  /**
   * The key that picks `action` for a seat whose legal actions are `legal`: a named key
   * when the label fits one (arrows, space, p, d, t), else a digit — the number in the
   * label when every label ends in a different one (board columns), else the action's
   * position (up to nine actions), else its position among the legal ones.
   */
  function keyFor(labels, legal, action) {
    const label = labels[action];
    for (const [key, names] of Object.entries(KEY_LABELS)) {
      if (!names.includes(label)) continue;
      // The first legal action answering to this key owns it.
      const owner = legal.find((a) => names.includes(labels[a]));
      if (owner === action) return key;
    }
    const numbers = labels.map((l) => (/(\d+)$/.exec(l) || [])[1]);
    let digit;
    if (numbers.every(Boolean) && new Set(numbers).size === labels.length) digit = Number(numbers[action]);
    else if (labels.length <= 9) digit = action + 1;
    else digit = legal.indexOf(action) + 1;
    return digit >= 1 && digit <= 9 ? String(digit) : null;
  }

  function actionForKey(labels, legal, key) {
    const pressed = key.length === 1 ? key.toLowerCase() : key;
    const action = legal.find((a) => keyFor(labels, legal, a) === pressed);
    return action === undefined ? null : action;
  }

  /** Whether the seat's agent moves relative to the way it faces (turns and forward). */
  function movesRelative(labels, legal) {
    const used = legal.map((a) => labels[a]);
    return used.includes('forward') || used.some((l) => l.startsWith('turn_'));
  }

  /** Whether the arrow keys move this seat's agent on the screen (see `arrowMode`). */
  const arrowsOnScreen = (labels, seat) =>
    arrowMode === 'screen' && Boolean(FACING_ARROW[seat.facing]) && movesRelative(labels, seat.legal);

  /**
   * On-screen arrows: the action `key` picks for an agent facing `facing` — forward when
   * it faces that way, else the quarter turn towards it (the right turn for the way back);
   * `null` when that move is not legal now.
   */
  function screenAction(labels, legal, facing, key) {
    const turns = (CLOCKWISE.indexOf(key) - CLOCKWISE.indexOf(FACING_ARROW[facing]) + 4) % 4;
    const names = turns === 0 ? FORWARD : turns === 3 ? TURN_LEFT : TURN_RIGHT;
    const action = legal.find((a) => names.includes(labels[a]));
    return action === undefined ? null : action;
  }

  /** The key that picks `action` for `seat`, in the arrow mode chosen. */
  function seatKey(labels, seat, action) {
    if (!arrowsOnScreen(labels, seat)) return keyFor(labels, seat.legal, action);
    // From the way it faces, clockwise: a right turn shows the arrow a quarter to the right.
    const start = CLOCKWISE.indexOf(FACING_ARROW[seat.facing]);
    const arrows = CLOCKWISE.map((_, k) => CLOCKWISE[(start + k) % 4]);
    const arrow = arrows.find((key) => screenAction(labels, seat.legal, seat.facing, key) === action);
    if (arrow) return arrow;
    const key = keyFor(labels, seat.legal, action);
    return key && key.startsWith('Arrow') ? null : key;
  }

  /** The action `key` picks for `seat`, in the arrow mode chosen; `null`: none. */
  function seatAction(labels, seat, key) {
    if (arrowsOnScreen(labels, seat) && CLOCKWISE.includes(key)) {
      return screenAction(labels, seat.legal, seat.facing, key);
    }
    return actionForKey(labels, seat.legal, key);
  }

  function setArrowMode(mode) {
    arrowMode = mode;
    try { localStorage.setItem(ARROW_MODE_KEY, mode); } catch (_) { /* not remembered */ }
    if (latest) render(latest);
  }

  function buildViewports() {
    const root = $('#viewports');
    root.replaceChildren();
    views.clear();
    for (const op of setup.operators) {
      const agentRows = op.agents.map((agent, index) =>
        el('tr', { 'data-agent': String(index) },
          el('td', {}, badge(agent.paradigm)),
          el('td', {},
            el('span', { class: 'mono agent-id', text: agent.id }),
            el('span', { class: 'outcome' }),
            el('div', { class: 'kind', text: agent.team && agent.team !== agent.id ? `${agent.kind} · team ${agent.team}` : agent.kind })),
          el('td', { class: 'num return', text: '0' }),
          el('td', { class: 'last mono', text: '–' })));
      const llmAgents = op.agents
        .map((agent, index) => ({ agent, index }))
        .filter(({ agent }) => agent.paradigm === 'llm' || agent.paradigm === 'vlm');
      const details = llmAgents.map(({ agent, index }) =>
        el('details', { 'data-agent': String(index), open: true },
          el('summary', { text: `${agent.id} · ${agent.paradigm.toUpperCase()} reasoning` }),
          el('dl', {})));
      const img = el('img', { class: 'frame', alt: `frame of ${op.id}` });
      const card = el('article', { class: 'viewport', 'data-op': op.id },
        el('header', {}, el('h2', { text: op.id }),
          el('span', { class: 'env', text: `${op.env} · ${op.stepping === 'sequential' ? 'AEC' : op.stepping === 'simultaneous' ? 'POSG' : 'single'}` })),
        el('div', { class: 'status' },
          el('span', { class: 'episode' }), el('span', { class: 'seed' }),
          el('span', { class: 'steps', 'data-testid': 'steps' }),
          el('span', { class: 'turn' }), el('span', { class: 'done' })),
        el('p', { class: 'you', hidden: true }),
        el('div', { class: 'frame-wrap' }, img),
        el('div', { class: 'waiting', hidden: true }),
        el('table', { class: 'agents' },
          el('thead', {}, el('tr', {},
            el('th', { text: 'paradigm' }), el('th', { text: 'agent' }),
            el('th', { class: 'num', text: 'return' }), el('th', { text: 'last action' }))),
          el('tbody', {}, ...agentRows)),
        details.length ? el('div', { class: 'llm-details' }, ...details) : null,
        el('ul', { class: 'events' }));
      root.append(card);
      views.set(op.id, { op, card, img, frameVersion: null, pendingFrame: null });
    }
  }

  function loadFrame(view, version) {
    if (version == null || view.frameVersion === version || view.pendingFrame === version) return;
    view.pendingFrame = version;
    const url = `/api/live/${encodeURIComponent(view.op.id)}/frame?v=${version}`;
    // Load off screen first so a running game does not flicker.
    const next = new Image();
    next.onload = () => {
      if (view.pendingFrame !== version) return;
      view.img.src = next.src;
      fitFrame(view.img, view.img.parentElement.clientWidth - 12);
      view.img.dataset.version = String(version);
      view.frameVersion = version;
      view.pendingFrame = null;
    };
    next.onerror = () => { if (view.pendingFrame === version) view.pendingFrame = null; };
    next.src = url;
  }

  function renderDetail(dl, detail) {
    dl.replaceChildren();
    if (!detail) { dl.append(el('dt', { text: '–' }), el('dd', { text: 'no decision yet' })); return; }
    const d = detail.decision || {};
    const rows = [
      ['step', String(detail.step)],
      ['action', `${detail.action ?? '–'}${detail.source && detail.source !== 'policy' ? ` (${detail.source})` : ''}`],
      ['reasoning', d.think],
      ['message', d.message == null ? null : `${d.message_to ? `to ${d.message_to}: ` : ''}${d.message}`],
      ['scratchpad', d.scratchpad],
      ['parsed', d.parse_ok == null ? null : `${d.parse_ok ? 'yes' : 'no'}${d.retries ? ` (${d.retries} re-prompts)` : ''}`],
      ['format error', Array.isArray(d.format_errors) && d.format_errors.length ? d.format_errors[d.format_errors.length - 1] : null],
      ['output', d.raw],
      ['cost', d.usage || d.latency_ms != null ? [
        d.usage ? `${d.usage.prompt_tokens ?? '?'} → ${d.usage.completion_tokens ?? '?'} tokens` : null,
        d.latency_ms != null ? `${(d.latency_ms / 1000).toFixed(1)} s` : null,
      ].filter(Boolean).join(', ') : null],
      ['error', d.error],
    ];
    for (const [name, value] of rows) {
      if (value == null || value === '') continue;
      dl.append(el('dt', { text: name }), el('dd', { text: String(value) }));
    }
  }

  /**
   * How the arrow keys move this seat's agent, for agents that move relative to the way
   * they face (turn left, turn right, forward): the hint, and where the world says which
   * way the agent faces, the switch between relative and on-screen arrows.
   */
  function keyHint(labels, seat) {
    if (!movesRelative(labels, seat.legal)) return null;
    const hint = arrowsOnScreen(labels, seat)
      ? el('p', { class: 'key-hint' },
        'Arrows move this agent on the screen: an arrow turns it to face that way, or moves it forward when it already does (it faces ',
        el('kbd', { text: KEY_NAMES[FACING_ARROW[seat.facing]] }), ').')
      : el('p', { class: 'key-hint' },
        'This agent moves relative to the way it faces: ', el('kbd', { text: '↑' }), ' forward, ',
        el('kbd', { text: '←' }), ' ', el('kbd', { text: '→' }), ' turn on the spot. Arrows do not move it on the screen.');
    if (!FACING_ARROW[seat.facing]) return hint;
    const option = (mode, text) => el('button', {
      type: 'button',
      'data-arrows': mode,
      'aria-pressed': String(arrowMode === mode),
      onclick: (event) => { if (event.detail > 0) event.currentTarget.blur(); setArrowMode(mode); },
    }, text);
    return el('div', { class: 'arrows' },
      el('div', { class: 'arrow-mode', role: 'group', 'aria-label': 'arrow keys' },
        el('span', { text: 'arrows: ' }), option('relative', 'relative'), option('screen', 'on screen')),
      hint);
  }

  function renderWaiting(view, box, waiting) {
    box.hidden = waiting.length === 0;
    view.card.dataset.waiting = String(waiting.length > 0);
    const signature = JSON.stringify([arrowMode, waiting]);
    if (box.dataset.signature === signature) return;
    box.dataset.signature = signature;
    box.replaceChildren();
    const labels = view.op.action_labels;
    for (const seat of waiting) {
      const choices = seat.legal.map((action) => {
        const key = seatKey(labels, seat, action);
        return el('button', {
          'data-action': String(action),
          title: key ? `key: ${KEY_NAMES[key] || key}` : '',
          onclick: () => choose(view.op.id, seat.agent, action),
        }, labels[action], key ? el('kbd', { text: KEY_NAMES[key] || key }) : null);
      });
      box.append(el('div', { class: 'seat', 'data-agent': String(seat.agent) },
        el('span', { text: 'Waiting for ' }), el('span', { class: 'who', text: seat.agent_id }),
        el('span', { text: ` (human) to move at step ${seat.step}` }),
        el('div', { class: 'choices' }, ...choices),
        keyHint(labels, seat),
        seat.text ? el('details', { class: 'obs' }, el('summary', { text: 'what the agent sees' }),
          el('pre', { text: seat.text })) : null));
    }
  }

  function render(state) {
    latest = state;
    const seedInput = $('#seed');
    if (appliedNextSeed !== state.next_seed && document.activeElement !== seedInput) {
      seedInput.value = String(state.next_seed);
      appliedNextSeed = state.next_seed;
    }
    const runButton = $('#run-pause');
    runButton.textContent = state.running ? 'Pause' : 'Run';
    runButton.dataset.running = String(state.running);
    $('#step-all').disabled = state.stepping || state.running || state.resetting;
    $('#reset-all').disabled = state.resetting;
    if (document.activeElement !== $('#pace')) {
      $('#pace').value = String(state.pace_ms);
      $('#pace-value').textContent = `${state.pace_ms} ms`;
    }
    const first = state.viewports.find((v) => v.status);
    $('#episode-counter').textContent = first
      ? `Episode ${first.status.episode_index} · seed ${first.status.seed}` : 'Episode –';
    const status = $('#live-status');
    status.dataset.waiting = String(state.waiting > 0);
    status.textContent = state.waiting > 0 ? 'Waiting for a human player…'
      : state.resetting ? 'resetting…' : state.stepping ? 'stepping…' : state.running ? 'running' : '';
    showError($('#live-error'), state.error);
    renderRecording(state.recording);

    for (const v of state.viewports) {
      const view = views.get(v.id);
      if (!view) continue;
      const { card, op } = view;
      const s = v.status;
      card.dataset.steps = s ? String(s.steps) : '';
      card.dataset.done = s ? String(s.done) : '';
      $('.episode', card).textContent = s ? `episode ${s.episode_index}` : '';
      $('.seed', card).textContent = s ? `seed ${s.seed}` : '';
      $('.steps', card).textContent = s
        ? `step ${s.steps}${setup.max_steps != null ? ` / ${setup.max_steps}` : ''}` : 'no episode';
      $('.done', card).textContent = s && s.done ? 'done' : '';
      $('.turn', card).textContent = s && !s.done && op.stepping === 'sequential' && s.acting.length
        ? `turn: ${s.acting.map((a) => op.agents[a].id).join(', ')}` : '';
      loadFrame(view, v.frame);
      renderYou(view, v.marked);
      renderWaiting(view, $('.waiting', card), v.waiting);
      const awaited = new Set(v.waiting.map((w) => w.agent));
      op.agents.forEach((agent, index) => {
        const row = $(`tbody tr[data-agent="${index}"]`, card);
        row.classList.toggle('acting', Boolean(s && !s.done && s.acting.includes(index)));
        row.classList.toggle('awaited', awaited.has(index));
        $('.return', row).textContent = s ? formatReturn(s.returns[index]) : '0';
        $('.last', row).textContent = (s && s.last_actions[index]) || '–';
        const outcome = v.ending && v.ending.outcomes[index];
        const cell = $('.outcome', row);
        cell.textContent = outcome || '';
        cell.className = `outcome${outcome ? ` outcome-${outcome}` : ''}`;
        cell.hidden = !outcome;
      });
      for (const details of card.querySelectorAll('.llm-details details')) {
        renderDetail($('dl', details), v.details[Number(details.dataset.agent)]);
      }
      const events = $('.events', card);
      const lines = [...v.events];
      if (v.ending && v.ending.error) lines.push(`episode failed: ${v.ending.error}`);
      if (events.dataset.signature !== JSON.stringify(lines)) {
        events.dataset.signature = JSON.stringify(lines);
        events.replaceChildren(...lines.map((line) => el('li', { text: line })));
      }
    }
  }

  /**
   * The card's legend of the agents people play here, and the colour that marks them on
   * the picture when the world marks them.
   */
  function renderYou(view, marked) {
    const you = $('.you', view.card);
    const humans = view.op.agents.filter((agent) => agent.paradigm === 'human').map((agent) => agent.id);
    you.hidden = humans.length === 0;
    view.card.dataset.marked = String(Boolean(marked));
    const signature = JSON.stringify([humans, Boolean(marked)]);
    if (you.dataset.signature === signature) return;
    you.dataset.signature = signature;
    you.replaceChildren(el('span', { text: 'you: ' }), el('span', { class: 'mono', text: humans.join(', ') }));
    if (marked) {
      const swatch = el('span', { class: 'swatch' });
      swatch.style.backgroundColor = setup.mark.colour;
      you.append(', outlined in ', swatch, ` ${setup.mark.name}`);
    }
  }

  /** The header's note of the run the episodes are recorded into. */
  function renderRecording(recording) {
    const note = $('#recording');
    note.hidden = false;
    if (!recording) {
      note.dataset.state = 'off';
      note.disabled = true;
      note.textContent = 'not recorded';
      note.title = 'Started with --no-record: the episodes played here are not recorded';
      return;
    }
    note.dataset.run = setup.recording.name;
    note.dataset.runId = recording.run_id;
    note.dataset.state = recording.error ? 'failed' : 'on';
    const episodes = count(recording.episodes, 'episode');
    note.textContent = recording.error ? recording.error : `● recording to ${recording.run_id} · ${episodes}`;
    note.title = recording.error
      ? `Recording into run ${recording.run_id} stopped`
      : 'Every episode played here is recorded into this run: open it in the runs browser';
  }
  $('#recording').addEventListener('click', (event) => {
    if (event.detail > 0) event.currentTarget.blur();
    if (!setup || !setup.recording) return;
    selectTab('runs');
    openRun(setup.recording.name);
  });

  async function control(path, body) {
    try {
      await api(path, body);
      showError($('#live-error'), '');
    } catch (error) {
      showError($('#live-error'), error.message);
    }
  }

  function choose(operator, agent, action) {
    return control('/api/live/choose', { operator, agent, action });
  }

  // The reset body is written by hand: seeds are u64 and must keep every digit (a
  // JavaScript number would round seeds above 2^53).
  $('#reset-all').addEventListener('click', async () => {
    const text = $('#seed').value.trim();
    if (!/^\d{1,20}$/.test(text)) { showError($('#live-error'), 'The seed must be a whole number ≥ 0.'); return; }
    appliedNextSeed = null;
    try {
      const headers = { 'Content-Type': 'application/json' };
      const response = await fetch('/api/live/reset', { method: 'POST', headers, body: `{"seed":${text}}` });
      if (!response.ok) {
        const data = await response.json().catch(() => ({}));
        throw new Error(data.error || `${response.status} ${response.statusText}`);
      }
      showError($('#live-error'), '');
    } catch (error) {
      showError($('#live-error'), error.message);
    }
  });
  $('#step-all').addEventListener('click', () => control('/api/live/step', {}));
  // After a mouse click a control gives the focus back, so that Space goes to a human
  // player's move rather than clicking the control again.
  for (const button of document.querySelectorAll('#controls button')) {
    button.addEventListener('click', (event) => { if (event.detail > 0) button.blur(); });
  }
  $('#run-pause').addEventListener('click', () => {
    if (latest && latest.running) control('/api/live/pause', {});
    else control('/api/live/run', { pace_ms: Number($('#pace').value) });
  });
  $('#pace').addEventListener('input', () => { $('#pace-value').textContent = `${$('#pace').value} ms`; });
  $('#pace').addEventListener('change', () => {
    if (latest && latest.running) control('/api/live/run', { pace_ms: Number($('#pace').value) });
  });

  document.addEventListener('keydown', (event) => {
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
    if (event.ctrlKey || event.metaKey || event.altKey || !latest || !setup) return;
    // The first awaited human seat, in viewport order, takes the key.
    for (const v of latest.viewports) {
      const seat = v.waiting[0];
      if (!seat) continue;
      const op = setup.operators.find((o) => o.id === v.id);
      const action = seatAction(op.action_labels, seat, event.key);
      if (action == null) return;
      event.preventDefault();
      choose(v.id, seat.agent, action);
      return;
    }
  });

  function connect() {
    const connection = $('#connection');
    const source = new EventSource('/api/live/events');
    source.addEventListener('state', (event) => {
      connection.dataset.state = 'live';
      connection.textContent = 'live';
      render(JSON.parse(event.data));
    });
    source.addEventListener('error', () => {
      connection.dataset.state = 'lost';
      connection.textContent = 'reconnecting…';
    });
  }

  async function startLive() {
    try {
      setup = await api('/api/live');
    } catch (error) {
      if (error.status === 404) {
        $('#no-experiment').hidden = false;
        $('#controls').hidden = true;
        $('#connection').textContent = 'no experiment';
        return;
      }
      showError($('#live-error'), error.message);
      return;
    }
    $('#experiment-name').textContent = setup.experiment;
    document.title = `${setup.experiment} · mosaic`;
    buildViewports();
    connect();
  }

  // ---- runs browser -----------------------------------------------------------------------
  const enc = encodeURIComponent;
  let replay = null;
  let playing = null;

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

  /** The runs the filter lets through, in the chosen order; unreadable runs last. */
  function shownRuns() {
    const words = $('#runs-filter').value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const status = $('#runs-status').value;
    const [, , value, numeric] = RUN_COLUMNS.find(([key]) => key === runsView.sort);
    const direction = runsView.descending ? -1 : 1;
    const matches = (text) => words.every((w) => text.includes(w));
    const readable = runsView.runs
      .filter((r) => !r.error && (!status || r.status === status)
        && matches(`${r.name} ${r.run_id} ${r.experiment} ${r.env}`.toLowerCase()))
      .sort((a, b) => {
        const [x, y] = [value(a), value(b)];
        const order = numeric ? x - y : String(x).localeCompare(String(y));
        return direction * order || a.name.localeCompare(b.name);
      });
    const broken = runsView.runs
      .map((r, i) => [r, i])
      .filter(([r]) => r.error && !status && matches(r.error.toLowerCase()));
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
    return el('section', { class: 'operator-report', 'data-operator': op.operator_id },
      el('h4', {}, el('span', { class: 'mono', text: op.operator_id }),
        el('span', { class: 'muted', text: ` · ${op.env} · ${episodeSummary(op, left.length)} · mean length ${
          op.mean_length != null || !partial ? formatNumber(op.mean_length, 1) : `${formatNumber(partial.length, 1)} (partial)`} · ${formatNumber(op.steps_per_s, 0)} steps/s` })),
      table(headers, rows),
      metrics.length ? el('p', { class: 'metrics', text: `metrics: ${metrics.map(([k, v]) => `${k} ${formatNumber(v, 3)}`).join(', ')}` }) : null);
  }

  /** `3 episodes (1 abandoned, 1 failed)`: abandoned ones are not failures of anybody. */
  function episodeSummary(op, abandonedCount) {
    const failed = op.failed - abandonedCount;
    const notes = [abandonedCount ? `${abandonedCount} abandoned` : null, failed > 0 ? `${failed} failed` : null].filter(Boolean);
    return `${count(op.episodes, 'episode')}${notes.length ? ` (${notes.join(', ')})` : ''}`;
  }

  /** The returns plots, or why there are none. */
  function plots(name, report) {
    if (!report.operators.some((op) => op.episodes > op.failed)) {
      return [el('p', { class: 'empty', 'data-testid': 'no-plots', text: 'Nothing to plot yet: no episode of this run has ended on its own (abandoned and failed episodes are not plotted).' })];
    }
    return ['returns', 'distribution'].map((plot) =>
      el('img', { class: 'plot', alt: `${plot} plot`, src: `/api/runs/${enc(name)}/plots/${plot}` }));
  }

  /** Shows `message` in a row under `row` (where the person clicked); none clears it. */
  function showRowError(row, message) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains('row-error')) next.remove();
    if (!message) return;
    const shown = el('tr', { class: 'row-error' },
      el('td', { colSpan: row.children.length, class: 'error', role: 'alert', text: message }));
    row.after(shown);
    shown.scrollIntoView({ block: 'nearest' });
  }

  async function openRun(name) {
    stopPlaying();
    $('#replay').hidden = true;
    try {
      const run = await api(`/api/runs/${enc(name)}`);
      showError($('#runs-error'), '');
      $('#run-detail').hidden = false;
      $('#run-detail').dataset.run = name;
      $('#run-title').textContent = `${run.experiment.name} — ${run.run_id}`;
      $('#run-meta').textContent = `${run.status} · ${run.done} / ${run.planned} episodes · started ${new Date(run.started).toLocaleString()}`;
      $('#run-report').replaceChildren(...run.report.operators.map((op) =>
        operatorReport(op, run.episodes.filter((e) => e.operator_id === op.operator_id))));
      $('#run-plots').replaceChildren(...plots(name, run.report));
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
            onclick: (event) => openReplay(name, e.operator_id, e.episode_index, event.currentTarget.closest('tr')),
          }))))));
    } catch (error) {
      showError($('#runs-error'), error.message);
    }
  }

  /** Opens a replay; a failure is shown under `row`, the episode clicked. */
  async function openReplay(run, operator, episode, row) {
    stopPlaying();
    try {
      const data = await api(`/api/runs/${enc(run)}/replay/${enc(operator)}/${episode}`);
      showRowError(row, '');
      replay = { run, operator, episode, data };
      const section = $('#replay');
      section.hidden = false;
      section.dataset.replay = `${run}/${operator}/${episode}`;
      $('#replay-title').textContent = `Replay: ${operator}, episode ${episode} (seed ${data.seed}, ${data.steps} steps)`;
      const scrubber = $('#scrubber');
      scrubber.max = String(data.steps);
      scrubber.value = '0';
      $('#replay-noframe').hidden = data.frames > 0;
      $('#replay-frame').hidden = data.frames === 0;
      showStep(0);
      section.scrollIntoView({ behavior: 'smooth', block: 'start' });
    } catch (error) {
      replay = null;
      $('#replay').hidden = true;
      showRowError(row, `Replay failed: ${error.message}`);
    }
  }

  function showStep(step) {
    if (!replay) return;
    const { run, operator, episode, data } = replay;
    step = Math.max(0, Math.min(step, data.steps));
    $('#scrubber').value = String(step);
    $('#replay-step').textContent = `step ${step} / ${data.steps}`;
    const img = $('#replay-frame');
    if (data.frames > 0) {
      img.src = `/api/runs/${enc(run)}/replay/${enc(operator)}/${episode}/frames/${step}`;
      img.dataset.step = String(step);
    }
    // Frame k shows the world after k steps: the actions that led to it are step k - 1's.
    const row = step > 0 ? data.timeline[step - 1] : null;
    const returns = data.agents.map((_, i) =>
      data.timeline.slice(0, step).reduce((sum, r) => sum + (r.rewards[i] || 0), 0));
    $('#replay-agents').replaceChildren(
      el('thead', {}, el('tr', {}, ...['paradigm', 'agent', 'action', 'return'].map((h) => el('th', { text: h })))),
      el('tbody', {}, ...data.agents.map((agent, i) => el('tr', {},
        el('td', {}, agent.paradigm ? badge(agent.paradigm) : null),
        el('td', { class: 'mono', text: agent.id }),
        el('td', { class: 'mono', text: (row && row.actions[i]) || '–' }),
        el('td', { class: 'num', text: formatReturn(returns[i]) })))));
    $('#replay-events').textContent = row && row.events.length ? `events: ${row.events.join(', ')}` : '';
  }

  function stopPlaying() {
    if (playing) clearInterval(playing);
    playing = null;
    $('#replay-play').textContent = '▶';
  }

  $('#replay-frame').addEventListener('load', () => fitFrame($('#replay-frame'), 480));
  window.addEventListener('resize', () => {
    for (const view of views.values()) fitFrame(view.img, view.img.parentElement.clientWidth - 12);
  });
  $('#scrubber').addEventListener('input', () => showStep(Number($('#scrubber').value)));
  $('#replay-prev').addEventListener('click', () => { stopPlaying(); showStep(Number($('#scrubber').value) - 1); });
  $('#replay-next').addEventListener('click', () => { stopPlaying(); showStep(Number($('#scrubber').value) + 1); });
  $('#replay-play').addEventListener('click', () => {
    if (playing) { stopPlaying(); return; }
    if (!replay) return;
    if (Number($('#scrubber').value) >= replay.data.steps) showStep(0);
    $('#replay-play').textContent = '❚❚';
    playing = setInterval(() => {
      const next = Number($('#scrubber').value) + 1;
      if (next > replay.data.steps) { stopPlaying(); return; }
      showStep(next);
    }, 250);
  });

  startLive();
})();
