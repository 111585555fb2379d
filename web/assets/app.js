// mosaic's page: the tabs and manual mode (live viewports). The runs browser is runs.js,
// the episode viewer viewer.js; common.js holds what they share.
'use strict';

(() => {
  const { $, el, fitFrame, api, showError, badge, count, formatReturn, renderDetail } = window.mosaic;

  // ---- tabs -------------------------------------------------------------------------------
  function selectTab(name) {
    for (const tab of document.querySelectorAll('.tab')) {
      tab.setAttribute('aria-selected', String(tab.dataset.tab === name));
    }
    for (const panel of document.querySelectorAll('.panel')) panel.hidden = panel.dataset.panel !== name;
    if (name === 'runs') window.mosaic.runs.load();
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
    window.mosaic.runs.open(setup.recording.name);
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

  window.addEventListener('resize', () => {
    for (const view of views.values()) fitFrame(view.img, view.img.parentElement.clientWidth - 12);
  });

  startLive();
})();
