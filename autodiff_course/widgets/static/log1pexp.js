// The log1pexp explorer of lesson 03 (autodiff_course/widgets/log1pexp/widget.py).
// Draws the tables TensorFlow computed; computes no number of its own.

const WIDTH = 640, HEIGHT = 420;
const AXES = { left: 92, right: 624, top: 152, bottom: 346 };
const STRIP = { top: 34, rowHeight: 20 }; // rows: naive, documented, stable, then the limits
const MARKS = { nan: "×", posinf: "▲", neginf: "▼", zero: "○" };

function symlog(y, threshold) {
  const scale = 0.5 / (1 - 1 / 10);
  const a = Math.abs(y);
  const t = a <= threshold ? a / threshold * scale : scale + Math.log10(a / threshold);
  return y < 0 ? -t : t;
}

function lowerBound(x, value) { // first index with x[i] >= value
  let lo = 0, hi = x.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (x[mid] < value) lo = mid + 1; else hi = mid; }
  return lo;
}

function nearestIndex(x, value) {
  const right = lowerBound(x, value);
  if (right === 0) return 0;
  if (right === x.length) return x.length - 1;
  return x[right] - value < value - x[right - 1] ? right : right - 1;
}

function clamp(v, lo, hi) { return Math.min(Math.max(v, lo), hi); }

function render({ model, el }) {
  const config = model.get("config");
  const tables = model.get("tables");
  const css = config.css;
  let view = structuredClone(model.get("view"));
  let renders = 0;
  const written = { flags: null, readout: null }; // what the texts last showed
  let unsent = null; // the latest view the model has not heard of yet

  const root = element("div", { class: `${css.explorer} course-widget`, role: "group", "aria-label": "log1pexp explorer" });
  const dtype = radioGroup("dtype", css.dtype, config.dtypes.map((d) => [d, d]), (d) => change({ dtype: d }));
  const quantity = radioGroup("plot", css.quantity,
    config.quantities.map((q) => [q, config.quantity_labels[q]]), (q) => change({ quantity: q }));
  const methodBoxes = {};
  const methods = element("fieldset", { class: `course-choice ${css.methods}` }, [element("legend", { text: "methods" })]);
  for (const method of config.methods) {
    const id = uniqueId("log1pexp-method");
    const box = element("input", { type: "checkbox", id, "data-method": method });
    box.addEventListener("change", () => {
      const chosen = config.methods.filter((m) => (m === method ? box.checked : view.methods.includes(m)));
      change({ methods: chosen });
    });
    methodBoxes[method] = box;
    methods.append(element("div", { class: `course-option log1pexp-method-${method}` }, [box, element("label", { for: id, text: config.method_labels[method] })]));
  }
  const xFrom = numberInput("x from", css.x_from, {}, (text) => change({ x_from: text }));
  const xTo = numberInput("x to", css.x_to, {}, (text) => change({ x_to: text }));
  const readout = numberInput("readout x", css.readout_x, {}, (text) => change({ readout_text: text }),
    (direction) => change({ readout_step: direction }));
  const range = element("div", { class: `course-row ${css.range}` }, [xFrom.box, xTo.box]);
  const { canvas, context } = sharpCanvas(WIDTH, HEIGHT, "");
  const plot = element("div", { class: css.plot }, [canvas]);
  const message = element("p", { class: "log1pexp-message course-message", role: "status", "aria-live": "polite" });
  const flags = element("ul", { class: "log1pexp-flags", "aria-label": "where the plotted methods are nan, inf or a silent 0.0" });
  const limits = element("p", { class: "log1pexp-limits" });
  const table = element("div", { class: css.readout, "aria-live": "polite" });
  root.append(
    element("div", { class: "course-row" }, [dtype.box, quantity.box, methods]),
    element("div", { class: "course-row" }, [range, readout.box]),
    message, plot, limits, flags, table,
  );
  el.append(root);

  function tableOf(d) { return tables[d]; }
  function column(d, method, q) { return decodeArray(tableOf(d).methods[method][q]); }

  // --- changing the view: the rules of autodiff_course/widgets/log1pexp/state.py ----
  function widened(lo, hi, d) {
    const step = config.steps[d], width = config.narrowest_steps * step;
    if (hi - lo >= width - 1e-9) return [[lo, hi], ""];
    const [bottom, top] = config.bounds[d];
    const middle = clamp((lo + hi) / 2, bottom + width / 2, top - width / 2);
    const ends = [Number((middle - width / 2).toFixed(6)), Number((middle + width / 2).toFixed(6))];
    return [ends, `The x range ${lo} to ${hi} is too narrow to plot; widened to ${ends[0]} to ${ends[1]}.`];
  }

  function readNumber(text, what) {
    const number = Number(String(text).trim());
    if (String(text).trim() === "" || Number.isNaN(number)) return [null, `${what} must be a number, not “${text}”.`];
    return [number, ""];
  }

  function change(request) {
    const next = structuredClone(view);
    let note = "";
    const [bottom, top] = config.bounds[next.dtype];
    if (request.dtype && request.dtype !== next.dtype) {
      next.remembered[next.dtype] = [next.x_range.slice(), next.readout_x];
      const old = next.dtype;
      next.dtype = request.dtype;
      if (next.remembered[next.dtype]) {
        [next.x_range, next.readout_x] = next.remembered[next.dtype];
      } else {
        const atDefault = (a, b) => a[0] === b[0] && a[1] === b[1];
        if (atDefault(next.x_range, config.default_range[old])) next.x_range = config.default_range[next.dtype].slice();
        if (next.readout_x === config.default_readout[old]) next.readout_x = config.default_readout[next.dtype];
      }
      const [b, t] = config.bounds[next.dtype];
      next.x_range = next.x_range.map((v) => clamp(v, b, t)).sort((a, c) => a - c);
      [next.x_range, note] = widened(next.x_range[0], next.x_range[1], next.dtype);
      next.readout_x = tabulated(next.dtype, clamp(next.readout_x, b, t));
    }
    if (request.quantity) next.quantity = request.quantity;
    if (request.methods) next.methods = config.methods.filter((m) => request.methods.includes(m));
    if ("x_from" in request || "x_to" in request) {
      const which = "x_from" in request ? 0 : 1;
      const [number, problem] = readNumber(which === 0 ? request.x_from : request.x_to, which === 0 ? "x from" : "x to");
      if (problem) note = problem;
      else {
        const ends = next.x_range.slice();
        ends[which] = clamp(number, bottom, top);
        ends.sort((a, c) => a - c);
        [next.x_range, note] = widened(ends[0], ends[1], next.dtype);
      }
    }
    if ("readout_text" in request) {
      const [number, problem] = readNumber(request.readout_text, "readout x");
      if (problem) note = problem;
      else {
        const wanted = clamp(number, bottom, top);
        next.readout_x = tabulated(next.dtype, wanted);
        if (next.readout_x !== wanted) note = `x = ${wanted} is not tabulated: the readout shows the nearest tabulated point, x = ${formatNumber(next.readout_x, "exact", next.dtype)}.`;
      }
    }
    if ("readout_step" in request) {
      const x = decodeArray(tableOf(next.dtype).x);
      const index = clamp(nearestIndex(x, next.readout_x) + request.readout_step, 0, x.length - 1);
      next.readout_x = x[index];
    }
    next.message = note;
    view = next;
    draw();
    // The model (and through it the kernel) hears of the change after the frame that
    // shows it, so a key press waits for no message.
    if (unsent === null) {
      requestAnimationFrame(() => setTimeout(() => {
        const sent = unsent;
        unsent = null;
        model.set("view", sent);
        model.save_changes();
      }, 0));
    }
    unsent = structuredClone(view);
  }

  function tabulated(d, value) {
    const x = decodeArray(tableOf(d).x);
    return x[nearestIndex(x, value)];
  }

  // --- drawing ----------------------------------------------------------------
  function draw() {
    const d = view.dtype, q = view.quantity;
    const x = decodeArray(tableOf(d).x);
    const [lo, hi] = view.x_range;
    const first = lowerBound(x, lo), last = lowerBound(x, hi + 1e-12 * Math.max(1, Math.abs(hi))) - 1;
    const limit = config.limits[d];
    writeControls();
    const series = view.methods.map((method) => ({
      method, style: config.styles[config.methods.indexOf(method)],
      y: column(d, method, q), flags: decodeArray(tableOf(d).flags[method][q]),
    }));
    // y limits from the finite points in view
    let yMin = Infinity, yMax = -Infinity;
    for (const s of series) for (let i = first; i <= last; i++) {
      const v = s.y[i];
      if (Number.isFinite(v)) { if (v < yMin) yMin = v; if (v > yMax) yMax = v; }
    }
    const logScale = q === "relative_error";
    const threshold = limit.eps / 16;
    let y0, y1;
    if (logScale) { y0 = 0; y1 = Math.max(1, Number.isFinite(yMax) ? yMax : 1) * 4; }
    else if (!Number.isFinite(yMin)) { y0 = 0; y1 = 1; }
    else {
      let span = yMax - yMin, a = yMin, b = yMax;
      if (span <= 1e-12 * Math.max(1, Math.abs(b))) { span = Math.max(Math.abs(b), 1) * 0.1; a -= span / 2; b += span / 2; }
      y0 = a - 0.06 * span; y1 = b + 0.06 * span;
    }
    const ty = (v) => (logScale ? symlog(v, threshold) : v);
    const t0 = ty(y0), t1 = ty(y1);
    const px = (v) => AXES.left + ((v - lo) / (hi - lo)) * (AXES.right - AXES.left);
    const py = (v) => AXES.bottom - ((ty(v) - t0) / (t1 - t0)) * (AXES.bottom - AXES.top);

    const c = context;
    c.clearRect(0, 0, WIDTH, HEIGHT);
    c.fillStyle = "#ffffff"; c.fillRect(0, 0, WIDTH, HEIGHT);
    c.font = "bold 14px sans-serif"; c.fillStyle = "#000"; c.textAlign = "center"; c.textBaseline = "alphabetic";
    c.fillText(`${d}: ${config.titles[q]}`, (AXES.left + AXES.right) / 2, 20);
    const stripBottom = STRIP.top + 5 * STRIP.rowHeight;
    // band and limit lines, over the strip and the axes
    const inView = (v) => v >= lo && v <= hi;
    if (limit.flush_start < hi && limit.overflow > lo) {
      c.fillStyle = config.band_colour; c.globalAlpha = 0.3;
      const a = px(Math.max(limit.flush_start, lo)), b = px(Math.min(limit.overflow, hi));
      c.fillRect(a, STRIP.top, b - a, stripBottom - STRIP.top);
      c.fillRect(a, AXES.top, b - a, AXES.bottom - AXES.top);
      c.globalAlpha = 1;
    }
    // grid and ticks
    const xTicks = niceTicks(lo, hi, 7);
    const yTicks = logScale ? symlogTicks(threshold) : niceTicks(y0, y1, 5);
    c.strokeStyle = "rgba(0,0,0,0.15)"; c.lineWidth = 1; c.setLineDash([]);
    c.font = "12px sans-serif"; c.fillStyle = "#000";
    c.textAlign = "center"; c.textBaseline = "top";
    for (const t of xTicks) {
      const p = px(t); if (p < AXES.left - 0.5 || p > AXES.right + 0.5) continue;
      c.beginPath(); c.moveTo(p, AXES.top); c.lineTo(p, AXES.bottom); c.stroke();
      c.fillText(formatNumber(t, "tick").replace("-", "−"), p, AXES.bottom + 6);
    }
    c.textAlign = "right"; c.textBaseline = "middle";
    for (const t of yTicks) {
      if (t < y0 || t > y1) continue;
      const p = py(t);
      c.beginPath(); c.moveTo(AXES.left, p); c.lineTo(AXES.right, p); c.stroke();
      const label = logScale ? (t === 0 ? "0" : t === 1 ? "1" : `1e${Math.round(Math.log10(t))}`) : formatNumber(t, "tick");
      c.fillText(label.replace("-", "−"), AXES.left - 6, p);
    }
    c.strokeStyle = "#000"; c.strokeRect(AXES.left, AXES.top, AXES.right - AXES.left, AXES.bottom - AXES.top);
    c.strokeRect(AXES.left, STRIP.top, AXES.right - AXES.left, stripBottom - STRIP.top);
    c.textAlign = "center"; c.textBaseline = "top"; c.fillText("x", (AXES.left + AXES.right) / 2, AXES.bottom + 24);
    c.save(); c.translate(18, (AXES.top + AXES.bottom) / 2); c.rotate(-Math.PI / 2);
    c.textBaseline = "middle"; c.fillText(config.quantity_labels[q], 0, 0); c.restore();
    c.setLineDash([6, 4]);
    for (const [value, dash] of [[limit.overflow, [6, 4]], [limit.cancellation, [2, 3]]]) {
      if (!inView(value)) continue;
      c.setLineDash(dash); c.beginPath();
      c.moveTo(px(value), STRIP.top); c.lineTo(px(value), AXES.bottom); c.stroke();
    }
    c.setLineDash([]);
    // the strip: one row per method, then the limits' labels
    c.textBaseline = "middle"; c.font = "12px sans-serif";
    config.methods.forEach((method, row) => {
      const yRow = STRIP.top + (row + 0.5) * STRIP.rowHeight;
      const s = series.find((one) => one.method === method);
      c.textAlign = "right"; c.fillStyle = s ? config.styles[row].text : "#6f6f6f";
      c.fillText(config.method_labels[method].replace(" autodiff", ""), AXES.left - 6, yRow);
      if (!s) return;
      c.textAlign = "center"; c.fillStyle = s.style.colour;
      let lastPixel = -10;
      for (let i = first; i <= last; i++) {
        const bits = s.flags[i]; if (!bits) continue;
        const p = px(x[i]); if (p - lastPixel < 3) continue; // one mark per 3 pixels
        lastPixel = p;
        for (const [kind, bit] of Object.entries(config.flag_bits)) if (bits & bit) c.fillText(MARKS[kind], p, yRow);
      }
    });
    c.fillStyle = "#000"; c.font = "11px sans-serif";
    const labelRow = (row, text, at) => {
      const yRow = STRIP.top + (row + 0.5) * STRIP.rowHeight;
      const left = at - lo > 0.55 * (hi - lo);
      c.textAlign = left ? "right" : "left";
      const p = clamp(px(at) + (left ? -4 : 4), AXES.left + 2, AXES.right - 2);
      c.fillStyle = "rgba(255,255,255,0.85)";
      const w = c.measureText(text).width;
      c.fillRect(left ? p - w - 2 : p - 2, yRow - 7, w + 4, 14);
      c.fillStyle = "#000"; c.fillText(text, p, yRow);
    };
    if (limit.flush_start < hi && limit.overflow > lo) {
      labelRow(4, `1/(1+eˣ) subnormal from ${limit.text.flush_start}, eˣ = inf from ${limit.text.overflow}`.replace(/-/g, "−"),
        Math.max(limit.overflow, lo));
    }
    if (inView(limit.cancellation)) labelRow(3, `1 + eˣ rounds to 1 below ${limit.text.cancellation}`.replace(/-/g, "−"), limit.cancellation);
    // the curves, broken where a point is not finite
    c.save(); c.beginPath(); c.rect(AXES.left, AXES.top, AXES.right - AXES.left, AXES.bottom - AXES.top); c.clip();
    c.lineWidth = 2;
    for (const s of series) {
      c.strokeStyle = s.style.colour; c.fillStyle = s.style.colour; c.setLineDash(DASHES[s.style.dash] || []);
      c.beginPath(); let open = false;
      for (let i = first; i <= last; i++) {
        const v = s.y[i];
        if (!Number.isFinite(v)) { open = false; continue; }
        const X = px(x[i]), Y = py(v);
        if (open) c.lineTo(X, Y); else { c.moveTo(X, Y); open = true; }
      }
      c.stroke(); c.setLineDash([]);
      const every = Math.max(1, Math.round((last - first + 1) / 10));
      for (let i = first; i <= last; i += every) if (Number.isFinite(s.y[i])) marker(c, s.style.marker, px(x[i]), py(s.y[i]), 3.5);
    }
    // the readout line and dots
    const readoutIndex = nearestIndex(x, view.readout_x);
    if (inView(view.readout_x)) {
      c.strokeStyle = "rgba(85,85,85,0.6)"; c.lineWidth = 1;
      c.beginPath(); c.moveTo(px(view.readout_x), AXES.top); c.lineTo(px(view.readout_x), AXES.bottom); c.stroke();
      for (const s of series) {
        const v = s.y[readoutIndex];
        if (!Number.isFinite(v)) continue;
        c.fillStyle = s.style.colour; c.strokeStyle = "#000"; c.lineWidth = 1;
        marker(c, s.style.marker, px(view.readout_x), py(v), 5.5, true);
      }
    }
    c.restore();
    // legend
    c.font = "12px sans-serif"; c.textAlign = "left"; c.textBaseline = "middle";
    series.forEach((s) => {
      const slot = AXES.left + 20 + config.methods.indexOf(s.method) * 175;
      c.strokeStyle = s.style.colour; c.setLineDash(DASHES[s.style.dash] || []); c.lineWidth = 2;
      c.beginPath(); c.moveTo(slot, 402); c.lineTo(slot + 30, 402); c.stroke(); c.setLineDash([]);
      c.fillStyle = s.style.colour; marker(c, s.style.marker, slot + 15, 402, 3.5);
      c.fillStyle = "#000"; c.fillText(config.method_labels[s.method], slot + 38, 402);
    });
    writeTexts(series, first, last, readoutIndex, yMin, yMax, logScale);
    renders += 1;
    root.dataset.renderCount = String(renders);
  }

  function symlogTicks(threshold) {
    const lowest = Math.ceil(Math.log10(threshold));
    const stride = Math.max(1, Math.ceil((1 - lowest) / 5));
    const ticks = [0];
    for (let e = 0; e > lowest - 1; e -= stride) ticks.push(Math.pow(10, e));
    return ticks.sort((a, b) => a - b);
  }

  function marker(c, kind, X, Y, size, outline = false) {
    c.beginPath();
    if (kind === "s") c.rect(X - size, Y - size, 2 * size, 2 * size);
    else if (kind === "^") { c.moveTo(X, Y - size * 1.2); c.lineTo(X + size, Y + size * 0.8); c.lineTo(X - size, Y + size * 0.8); c.closePath(); }
    else c.arc(X, Y, size, 0, 2 * Math.PI);
    c.fill(); if (outline) c.stroke();
  }

  function writeControls() {
    const d = view.dtype, [b, t] = config.bounds[d], step = config.steps[d];
    for (const [value, input] of Object.entries(dtype.inputs)) input.checked = value === d;
    for (const [value, input] of Object.entries(quantity.inputs)) input.checked = value === view.quantity;
    for (const [method, box] of Object.entries(methodBoxes)) box.checked = view.methods.includes(method);
    for (const [input, value] of [[xFrom.input, view.x_range[0]], [xTo.input, view.x_range[1]], [readout.input, view.readout_x]]) {
      input.min = b; input.max = t; input.step = step;
      if (document.activeElement !== input || input.value === "" || Number(input.value) !== value) input.value = String(value);
    }
    readout.input.value = formatNumber(view.readout_x, "exact", d);
  }

  function writeTexts(series, first, last, index, yMin, yMax, logScale) {
    const d = view.dtype, q = view.quantity, [lo, hi] = view.x_range;
    const limit = config.limits[d];
    message.textContent = view.message || "";
    message.hidden = !view.message;
    limits.textContent = `${d} limits: 1 + e^x rounds to 1 for x < ${limit.text.cancellation}; 1/(1 + e^x) is below the smallest normal float for x > ${limit.text.flush_start}; exp(x) overflows for x > ${limit.text.overflow}.`;
    const said = {};
    for (const s of series) {
      const runs = tableOf(d).runs[s.method][q].filter(([a, b]) => b >= lo && a <= hi).map((run) => run[2]);
      said[s.method] = runs.length ? runs.join("; ") : "no nan, no inf, no silent 0.0";
    }
    // The page is re-laid out only where its text changed (a key press is one frame).
    const flagsKey = JSON.stringify(said);
    if (flagsKey !== written.flags) {
      written.flags = flagsKey;
      flags.replaceChildren();
      for (const s of series) {
        flags.append(element("li", { "data-method": s.method }, [
          element("span", { style: `color:${s.style.text};font-weight:bold`, text: config.method_labels[s.method] }),
          `: ${said[s.method]}.`,
        ]));
      }
      if (!series.length) flags.append(element("li", { text: "No method selected." }));
    }
    // the text alternative of the plot, as Python's wording.alt_text writes it
    const phrase = q === "relative_error" ? "relative error of the gradient of log(1 + e^x) against float64" : `${config.quantity_labels[q]} of log(1 + e^x)`;
    const sentences = [`Plot of the ${d} ${phrase} for x from ${formatNumber(lo, "fixed")} to ${formatNumber(hi, "fixed")}.`];
    if (!series.length) sentences.push("No method is shown.");
    for (const s of series) sentences.push(`${config.method_labels[s.method]}: ${said[s.method]}.`);
    if (Number.isFinite(yMin)) sentences.push(`Finite values run from ${formatNumber(yMin)} to ${formatNumber(yMax)}${logScale ? " (symmetric log scale)" : ""}.`);
    const marks = [];
    if (limit.flush_start < hi && limit.overflow > lo) marks.push(`a shaded band from x = ${limit.text.flush_start}, where 1/(1 + e^x) falls below the smallest normal float`);
    if (lo <= limit.overflow && limit.overflow <= hi) marks.push(`a dashed line at x = ${limit.text.overflow}, where exp(x) overflows`);
    if (lo <= limit.cancellation && limit.cancellation <= hi) marks.push(`a dotted line at x = ${limit.text.cancellation}, below which 1 + e^x rounds to 1`);
    if (lo <= view.readout_x && view.readout_x <= hi) marks.push(`the readout line at x = ${formatNumber(view.readout_x)}`);
    if (marks.length) sentences.push(`Marked: ${marks.join("; ")}.`);
    canvas.setAttribute("aria-label", sentences.join(" "));
    writeReadout(index);
  }

  function writeReadout(index) {
    const d = view.dtype, t = tableOf(d);
    const xValue = decodeArray(t.x)[index];
    const [lo, hi] = view.x_range;
    const where = lo <= xValue && xValue <= hi ? "" : " (outside the plotted range)";
    const range = { "x-min": formatNumber(lo, "exact"), "x-max": formatNumber(hi, "exact") };
    const key = JSON.stringify([d, index, view.quantity, view.methods, where]);
    if (key === written.readout && table.firstChild) {
      for (const [name, value] of Object.entries(range)) table.firstChild.setAttribute(`data-${name}`, value);
      return;
    }
    written.readout = key;
    const data = {
      x: formatNumber(xValue, "exact", d), dtype: d, quantity: view.quantity,
      ...range, methods: view.methods.join(" "),
    };
    const keys = [["value", "value"], ["gradient", "gradient"], ["second_derivative", "second-derivative"], ["relative_error", "relative-error"]];
    const header = element("tr", {}, [
      element("th", { scope: "col", text: "method" }),
      ...["value", "gradient", "second derivative", "relative error of gradient"].map((name) => element("th", { scope: "col", text: name })),
    ]);
    const rows = [];
    for (const method of view.methods) {
      const style = config.styles[config.methods.indexOf(method)];
      const row = element("tr", { "data-method": method }, [
        element("th", { scope: "row", style: `color:${style.text}`, text: config.method_labels[method] }),
      ]);
      for (const [key, name] of keys) {
        const value = decodeArray(t.methods[method][key])[index];
        const exact = formatNumber(value, "exact", key === "relative_error" ? "float64" : d);
        data[`${method}-${name}`] = exact;
        row.dataset[name.replace(/-([a-z])/g, (_, ch) => ch.toUpperCase())] = exact;
        const bits = decodeArray(t.flags[method][key === "relative_error" ? "gradient" : key])[index];
        const silent = key !== "relative_error" && (bits & config.flag_bits.zero);
        const bad = key === "relative_error" ? !Number.isFinite(value) || value >= 1e-3 : silent || !Number.isFinite(value);
        row.append(element("td", {
          class: bad ? "course-flagged" : null,
          title: silent ? "0.0 where the true value is not 0" : bad && key !== "relative_error" ? "not a finite number" : null,
          text: formatNumber(value),
        }));
      }
      rows.push(row);
    }
    const reference = element("tr", { "data-method": "reference" }, [element("th", { scope: "row", class: "course-plain", text: "float64 reference" })]);
    for (const [key] of keys.slice(0, 3)) reference.append(element("td", { text: formatNumber(decodeArray(t.reference[key])[index]) }));
    reference.append(element("td", { text: "—" }));
    rows.push(reference);
    const note = view.methods.length ? "" : " No method is selected: tick one above.";
    const outer = element("div", { class: "log1pexp-readout-values" }, [
      element("b", { text: `At x = ${formatNumber(xValue)}` }), ` (${d})${where}.${note}`,
      element("table", {}, [element("caption", { class: "course-hidden", text: `readout at x = ${formatNumber(xValue)}` }), header, ...rows]),
    ]);
    for (const [key, value] of Object.entries(data)) outer.setAttribute(`data-${key}`, value);
    table.replaceChildren(outer);
  }

  model.on("change:view", () => {
    const sent = model.get("view");
    if (JSON.stringify(sent) === JSON.stringify(view)) return; // our own change
    view = structuredClone(sent);
    draw();
  });
  draw();
  return () => {};
}

export default { render };
