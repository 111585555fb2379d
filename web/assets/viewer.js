// mosaic's page: the episode viewer — a recorded episode step by step (each agent's action,
// its operator's reasoning, the messages it sent and read, its scratchpad), beside the
// frames of its replay, and a timeline of the messages between the agents.
'use strict';

(() => {
  const { $, el, fitFrame, api, badge, count, formatReturn, renderDetail } = window.mosaic;
  const enc = encodeURIComponent;

  /**
   * The episode on show: `view` is the server's record view (`/episodes/...`), `replay`
   * the replay's summary (`frames`, `timeline`), or null with `noFrames` saying why.
   */
  let shown = null;
  let playing = null;

  /** Shows `message` in a row under `row` (where the person clicked); none clears it. */
  function showRowError(row, message) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains('row-error')) next.remove();
    if (!message) return;
    const error = el('tr', { class: 'row-error' },
      el('td', { colSpan: row.children.length, class: 'error', role: 'alert', text: message }));
    row.after(error);
    error.scrollIntoView({ block: 'nearest' });
  }

  function close() {
    stopPlaying();
    shown = null;
    $('#replay').hidden = true;
  }

  /**
   * Opens episode `episode` of `operator` in `run`: its records and its replay, fetched
   * together. A replay that does not reproduce the records is an error shown under `row`
   * (the episode clicked); an environment this server may not rebuild only costs the
   * frames.
   */
  async function open(run, operator, episode, row) {
    close();
    const base = `/api/runs/${enc(run)}`;
    const [view, replay] = await Promise.allSettled([
      api(`${base}/episodes/${enc(operator)}/${episode}`),
      api(`${base}/replay/${enc(operator)}/${episode}`),
    ]);
    const failure = view.status === 'rejected' ? `Episode failed: ${view.reason.message}`
      : replay.status === 'rejected' && replay.reason.status !== 403 ? `Replay failed: ${replay.reason.message}` : '';
    showRowError(row, failure);
    if (failure) return;
    const data = view.value;
    shown = {
      run,
      operator,
      episode,
      view: data,
      replay: replay.status === 'fulfilled' ? replay.value : null,
      noFrames: replay.status === 'rejected' ? `No frames: ${replay.reason.message}` : 'This environment draws no frames.',
      heard: messagesHeard(data),
    };
    const section = $('#replay');
    section.hidden = false;
    section.dataset.replay = `${run}/${operator}/${episode}`;
    $('#replay-title').textContent = `Episode: ${operator}, episode ${episode} (seed ${data.seed}, ${count(data.steps, 'step')}${data.end ? `, ${data.end}` : ''})`;
    const scrubber = $('#scrubber');
    scrubber.max = String(data.steps);
    scrubber.value = '0';
    const frames = shown.replay ? shown.replay.frames : 0;
    $('#replay-noframe').textContent = shown.noFrames;
    $('#replay-noframe').hidden = frames > 0;
    $('#replay-frame').hidden = frames === 0;
    renderMessages();
    showStep(0);
    section.scrollIntoView({ behavior: 'smooth', block: 'start' });
  }

  /** Per message index, the text to show for it: `red → blue: text`. */
  function messagesHeard(view) {
    return view.messages.map((m) => `${m.from} → ${m.to || (m.scope === 'all' ? 'all' : 'team')}: ${m.text}`);
  }

  /** The timeline of messages: a lane per agent with a mark per message, and the list. */
  function renderMessages() {
    const { view } = shown;
    const box = $('#viewer-messages');
    if (!view.messages.length) {
      const talkers = view.timeline.some((s) => s.agents.some((a) => a.received != null));
      box.replaceChildren(el('p', { class: 'empty', 'data-testid': 'no-messages',
        text: talkers ? 'No messages: the agents could talk but none did in this episode.'
          : 'No messages in this episode: none of its agents talks.' }));
      return;
    }
    const span = Math.max(view.steps, 1);
    const lanes = view.agents.map((agent) => el('div', { class: 'lane', 'data-lane': agent.id },
      el('span', { class: 'lane-name mono', text: agent.id }),
      el('div', { class: 'lane-track' },
        el('span', { class: 'lane-cursor' }),
        ...view.messages.map((m, i) => [m, i]).filter(([m]) => m.from === agent.id).map(([m, i]) => {
          const mark = el('button', {
            class: 'msg-mark',
            'data-message': String(i),
            title: `step ${m.step}: ${shown.heard[i]}`,
            'aria-label': `message at step ${m.step} from ${m.from}`,
            onclick: () => jump(m.step),
          });
          mark.style.left = `${(100 * m.step) / span}%`;
          return mark;
        }))));
    const list = el('ol', { class: 'msg-list' }, ...view.messages.map((m, i) => el('li', {},
      el('button', {
        class: 'msg-item',
        'data-message': String(i),
        'data-step': String(m.step),
        onclick: () => jump(m.step),
      },
      el('span', { class: 'msg-step', text: `step ${m.step}` }), ' ',
      el('span', { class: 'mono', text: `${m.from} → ${m.to || m.scope}` }), ': ',
      el('span', { class: 'msg-text', text: m.text }), ' ',
      el('span', { class: 'muted', text: m.read_by.length
        ? `(read by ${m.read_by.map((r) => `${r.agent} at step ${r.step}`).join(', ')})` : '(not read)' })))));
    box.replaceChildren(el('div', { class: 'lanes' }, ...lanes), list);
  }

  function jump(step) {
    stopPlaying();
    showStep(step);
  }

  /**
   * Frame `step` (the world after `step` steps) and the decisions taken on it (step
   * `step` of the records; the last frame has none: the episode is over).
   */
  function showStep(step) {
    if (!shown) return;
    const { run, operator, episode, view, replay } = shown;
    step = Math.max(0, Math.min(step, view.steps));
    $('#scrubber').value = String(step);
    $('#replay-step').textContent = `step ${step} / ${view.steps}`;
    $('#replay').dataset.step = String(step);
    const img = $('#replay-frame');
    if (replay && replay.frames > 0) {
      img.src = `/api/runs/${enc(run)}/replay/${enc(operator)}/${episode}/frames/${step}`;
      img.dataset.step = String(step);
    }
    const row = view.timeline.find((s) => s.step === step) || null;
    const returns = new Map(view.agents.map((a) => [a.id, 0]));
    for (const s of view.timeline) {
      if (s.step >= step) break;
      for (const d of s.agents) returns.set(d.agent, returns.get(d.agent) + d.reward);
    }
    $('#replay-agents').replaceChildren(...view.agents.map((agent) =>
      agentCard(agent, row && row.agents.find((d) => d.agent === agent.id), returns.get(agent.id))));
    const before = view.timeline.find((s) => s.step === step - 1);
    const events = before ? before.events : [];
    $('#replay-events').textContent = events.length ? `events of step ${step - 1}: ${events.join(', ')}` : '';
    $('#replay-decided').textContent = row ? `Decisions on this frame (step ${step})`
      : step === view.steps ? 'The episode is over: no decisions on the last frame.' : `No records of step ${step}.`;
    for (const mark of document.querySelectorAll('#viewer-messages [data-message]')) {
      mark.classList.toggle('current', view.messages[Number(mark.dataset.message)].step === step);
    }
    for (const cursor of document.querySelectorAll('#viewer-messages .lane-cursor')) {
      cursor.style.left = `${(100 * step) / Math.max(view.steps, 1)}%`;
    }
  }

  /** One agent at one step: action, return, messages, scratchpad and reasoning. */
  function agentCard(agent, decision, returnSoFar) {
    const card = el('div', { class: 'viewer-agent', 'data-agent': agent.id },
      el('div', { class: 'viewer-agent-head' }, badge(agent.paradigm), ' ',
        el('span', { class: 'mono', text: agent.id }),
        agent.team ? el('span', { class: 'muted', text: ` (${agent.team})` }) : null,
        el('span', { class: 'num viewer-return', text: `return ${formatReturn(returnSoFar)}` })));
    if (!decision) {
      card.append(el('p', { class: 'empty', text: 'no record at this step (gone, or the episode is over)' }));
      return card;
    }
    const d = decision.detail || {};
    const sent = decision.sent == null ? null : shown.view.messages[decision.sent];
    const dl = el('dl', { class: 'viewer-detail' });
    renderDetail(dl, {
      action: decision.action,
      source: decision.source,
      decision: {
        ...d,
        message: sent ? sent.text : null,
        message_to: sent ? sent.to || `${sent.scope} (broadcast)` : null,
        scratchpad: decision.scratchpad,
      },
    });
    card.append(dl);
    const heard = heardText(decision);
    if (heard) dl.append(el('dt', { text: 'read' }), el('dd', { 'data-field': 'heard', text: heard }));
    dl.append(el('dt', { text: 'reward' }), el('dd', { class: 'num', text: formatReturn(decision.reward) }));
    if (decision.observation) {
      card.append(el('details', {}, el('summary', { text: 'observation' }), el('pre', { text: decision.observation })));
    }
    if (d.prompt) {
      card.append(el('details', {}, el('summary', { text: 'prompt' }), el('pre', { text: JSON.stringify(d.prompt, null, 1) })));
    }
    return card;
  }

  /** What an agent read at a step: the messages, or their number when they are not known. */
  function heardText(decision) {
    if (decision.received == null || decision.received === 0) return decision.received === 0 ? 'nothing' : null;
    if (!decision.heard) return `${count(decision.received, 'message')} (which ones is not recorded)`;
    return decision.heard.map((i) => shown.heard[i]).join('\n');
  }

  function stopPlaying() {
    if (playing) clearInterval(playing);
    playing = null;
    $('#replay-play').textContent = '▶';
  }

  $('#replay-frame').addEventListener('load', () => fitFrame($('#replay-frame'), 480));
  $('#scrubber').addEventListener('input', () => showStep(Number($('#scrubber').value)));
  $('#replay-prev').addEventListener('click', () => { stopPlaying(); showStep(Number($('#scrubber').value) - 1); });
  $('#replay-next').addEventListener('click', () => { stopPlaying(); showStep(Number($('#scrubber').value) + 1); });
  $('#replay-play').addEventListener('click', () => {
    if (playing) { stopPlaying(); return; }
    if (!shown) return;
    if (Number($('#scrubber').value) >= shown.view.steps) showStep(0);
    $('#replay-play').textContent = '❚❚';
    playing = setInterval(() => {
      const next = Number($('#scrubber').value) + 1;
      if (next > shown.view.steps) { stopPlaying(); return; }
      showStep(next);
    }, 250);
  });

  window.mosaic.viewer = { open, close };
})();
