// mosaic's page: what its scripts share (loaded first). Plain JavaScript, no build step:
// the server embeds these files as they are.
'use strict';

window.mosaic = (() => {
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

  /** An agent's decision as the page shows it: action, reasoning, message, scratchpad, cost. */
  function renderDetail(dl, detail) {
    dl.replaceChildren();
    if (!detail) { dl.append(el('dt', { text: '–' }), el('dd', { text: 'no decision yet' })); return; }
    const d = detail.decision || {};
    const rows = [
      ['step', detail.step == null ? null : String(detail.step)],
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

  return {
    $, el, fitFrame, api, showError, badge, count, formatReturn, renderDetail,
  };
})();
