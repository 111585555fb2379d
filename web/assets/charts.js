// mosaic's page: interactive line charts (uPlot, bundled as vendor/uPlot.iife.min.js):
// values under the pointer in the legend, drag to zoom (double-click to zoom out), and a
// smoothing slider (exponential moving average, as TensorBoard's).
'use strict';

(() => {
  const { el } = window.mosaic;
  const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
  const WIDTH = 680;
  const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];
  const HEIGHT = 300;

  /**
   * `points` smoothed by an exponential moving average of weight `weight` (0: none),
   * debiased so the first values are not pulled towards zero; gaps stay gaps.
   */
  function smooth(values, weight) {
    if (!weight) return values.slice();
    let last = 0;
    let seen = 0;
    return values.map((y) => {
      if (y == null) return null;
      last = last * weight + (1 - weight) * y;
      seen += 1;
      return last / (1 - weight ** seen);
    });
  }

  /** Series of `[x, y]` points on one shared, sorted x axis (uPlot's layout), gaps as null. */
  function align(series) {
    const xs = [...new Set(series.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    return [xs, ...series.map((s) => {
      const ys = new Array(xs.length).fill(null);
      for (const [x, y] of s.points) ys[at.get(x)] = y;
      return ys;
    })];
  }

  const formatValue = (v) => (v == null ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(3));

  /**
   * A line chart of `series` (`[{label, points: [[x, y], ...]}]`) in a figure appended to
   * `container`: `title`, axis labels, one colour per series; with `smoothing`, a slider
   * that smooths every series. The figure's `chart` is the uPlot instance and `raw` the
   * unsmoothed data.
   */
  function lineChart(container, { title, xLabel, yLabel, series, smoothing = false, id, wholeX = false }) {
    const raw = align(series);
    const figure = el('figure', { class: 'chart', 'data-chart': id || title });
    figure.append(el('figcaption', { text: title }));
    container.append(figure);
    const width = Math.min(WIDTH, Math.max(320, (container.clientWidth || WIDTH) - 24));
    const chart = new window.uPlot({
      width,
      height: HEIGHT,
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false } },
      // Episodes are counted: no ticks between them.
      axes: [{ label: xLabel, ...(wholeX ? { incrs: WHOLE_STEPS } : {}) }, { label: yLabel }],
      series: [
        { label: xLabel, value: (u, v) => formatValue(v) },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length],
          width: 2,
          spanGaps: true,
          points: { show: raw[0].length <= 60 },
          value: (u, v) => formatValue(v),
        })),
      ],
    }, raw, figure);
    figure.chart = chart;
    figure.raw = raw;
    if (smoothing) {
      const output = el('output', { class: 'smoothing-value', text: '0' });
      const slider = el('input', {
        type: 'range', min: '0', max: '0.99', step: '0.01', value: '0', class: 'smoothing', 'aria-label': `smoothing of ${title}`,
        oninput: (event) => {
          const weight = Number(event.currentTarget.value);
          output.textContent = weight.toFixed(2);
          // Same x range: keep the zoom, redraw the paths.
          chart.setData([raw[0], ...raw.slice(1).map((ys) => smooth(ys, weight))], false);
          chart.redraw(false, true);
          // The legend shows the point under the pointer: its value has changed.
          if (chart.cursor.idx != null) chart.setLegend({ idx: chart.cursor.idx });
        },
      });
      figure.append(el('label', { class: 'smoothing-control' }, 'smoothing ', slider, ' ', output));
    }
    figure.append(el('p', { class: 'chart-hint muted', text: 'Drag across the plot to zoom in, double-click to zoom out; the legend shows the values under the pointer.' }));
    return figure;
  }

  /** Counts of `values` in `bins` equal bins over [low, high] (at least one unit wide). */
  function histogram(values, low, high, bins) {
    const width = (high - low) / bins;
    const counts = new Array(bins).fill(0);
    for (const v of values) counts[Math.min(bins - 1, Math.floor((v - low) / width))] += 1;
    return counts.map((n, i) => [low + (i + 0.5) * width, n]);
  }

  /**
   * The charts of a run's returns (`[{label, points: [[episode, return], ...]}]`): the
   * return per episode of each operator configuration (smoothable), and their distribution.
   */
  function reportCharts(container, returns) {
    const operators = returns.filter((s) => s.points.length);
    lineChart(container, {
      id: 'returns',
      title: 'Return per episode (sum over agents)',
      xLabel: 'episode',
      yLabel: 'return',
      series: operators,
      smoothing: true,
      wholeX: true,
    });
    const all = operators.flatMap((s) => s.points.map(([, v]) => v));
    let [low, high] = [Math.min(...all), Math.max(...all)];
    if (high - low < 1e-9) [low, high] = [low - 0.5, high + 0.5];
    lineChart(container, {
      id: 'distribution',
      title: 'Distribution of returns (episodes per bin)',
      xLabel: 'return',
      yLabel: 'episodes',
      series: operators.map((s) => ({ label: s.label, points: histogram(s.points.map(([, v]) => v), low, high, 12) })),
    });
  }

  window.mosaic.charts = { lineChart, reportCharts, smooth };
})();
