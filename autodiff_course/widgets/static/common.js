// What the course's widgets share (lessons 01, 03, 05). They only draw: every number
// they show arrives in the widget's state, computed in Python with TensorFlow.

const DECODED = new WeakMap();

// The typed array of {dtype, data: base64}, decoded once per payload object.
function decodeArray(payload) {
  if (DECODED.has(payload)) return DECODED.get(payload);
  const text = atob(payload.data);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const kind = { float32: Float32Array, float64: Float64Array, uint8: Uint8Array }[payload.dtype];
  const array = new kind(bytes.buffer);
  DECODED.set(payload, array);
  return array;
}

// --- writing numbers: the same text as Python's format_number ----------------------

// The digits of |v| rounded half to even at `precision` significant digits:
// [digit string, decimal exponent of the first digit].
function roundedDigits(v, precision) {
  const exact = Math.abs(v).toExponential(99); // exact enough to see a true tie
  const [mantissa, exponentText] = exact.split("e");
  const all = mantissa.replace(".", "");
  let exponent = parseInt(exponentText, 10);
  let kept = all.slice(0, precision).split("").map(Number);
  const rest = all.slice(precision);
  const up = rest[0] > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || kept[kept.length - 1] % 2 === 1));
  if (up) {
    let i = kept.length - 1;
    while (i >= 0 && kept[i] === 9) { kept[i] = 0; i--; }
    if (i < 0) { kept.unshift(1); kept.pop(); exponent += 1; } else kept[i] += 1;
  }
  return [kept.join(""), exponent];
}

// Python's "%.{precision}g".
function formatG(v, precision) {
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const sign = v < 0 ? "-" : "";
  const [digits, exponent] = roundedDigits(v, precision);
  if (exponent < -4 || exponent >= precision) {
    let mantissa = digits[0] + (digits.length > 1 ? "." + digits.slice(1) : "");
    if (mantissa.includes(".")) mantissa = mantissa.replace(/0+$/, "").replace(/\.$/, "");
    const e = Math.abs(exponent);
    return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  let text;
  if (exponent >= 0) {
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
    const fraction = digits.slice(exponent + 1);
    text = fraction ? `${whole}.${fraction}` : whole;
  } else {
    text = "0." + "0".repeat(-exponent - 1) + digits;
  }
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  return sign + text;
}

// Round a number to the nearest float16 (half to even), as a JS number.
function float16Round(v) {
  if (!isFinite(v) || v === 0) return v;
  const sign = v < 0 ? -1 : 1;
  const a = Math.abs(v);
  if (a >= 65520) return sign * Infinity;
  const exponent = Math.max(Math.floor(Math.log2(a)), -14);
  const quantum = Math.pow(2, exponent - 10);
  let q = a / quantum;
  const floor = Math.floor(q);
  const diff = q - floor;
  q = diff > 0.5 || (diff === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
  return sign * q * quantum;
}

const ROUND_TO = { float64: (v) => v, float32: Math.fround, float16: float16Round };

// NumPy's str() of a number of `dtype`: the shortest digits that read back as it.
function formatExact(v, dtype) {
  if (Number.isNaN(v)) return "nan";
  if (!isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return Object.is(v, -0) ? "-0.0" : "0.0";
  const round = ROUND_TO[dtype] || ROUND_TO.float64;
  let digits = null, exponent = 0;
  for (let p = 1; p <= 17; p++) {
    const [d, e] = roundedDigits(v, p);
    if (round(Number(`${v < 0 ? "-" : ""}${d[0]}.${d.slice(1) || "0"}e${e}`)) === v) {
      digits = d.replace(/0+$/, "") || "0";
      exponent = e;
      break;
    }
  }
  const sign = v < 0 ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    const mantissa = digits[0] + (digits.length > 1 ? "." + digits.slice(1) : "");
    const e = Math.abs(exponent);
    return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  if (exponent >= 0) {
    const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
    return `${sign}${whole}.${digits.slice(exponent + 1) || "0"}`;
  }
  return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
}

// The one way the widgets write a number (see autodiff_course/widgets/log1pexp/wording.py).
function formatNumber(v, style = "short", dtype = "float64") {
  if (style === "exact") return formatExact(v, dtype);
  if (Number.isNaN(v)) return "nan";
  if (!isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (style === "short") {
    const text = formatG(v, 6);
    return /[.e]/.test(text) ? text : text + ".0";
  }
  if (style === "fixed") return fixed2(v);
  if (style === "tick") return v === 0 ? "0" : formatG(v, 6);
  return String(v);
}

// Two decimals, rounded half to even like Python's "%.2f".
function fixed2(v) {
  if (v === 0) return Object.is(v, -0) ? "-0.00" : "0.00";
  const exact = Math.abs(v).toFixed(20);
  let [whole, fraction] = exact.split(".");
  const kept = fraction.slice(0, 2), rest = fraction.slice(2);
  let cents = BigInt(whole + kept);
  const up = rest[0] > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || Number(kept[1]) % 2 === 1));
  if (up) cents += 1n;
  const text = cents.toString().padStart(3, "0");
  return `${v < 0 ? "-" : ""}${text.slice(0, -2)}.${text.slice(-2)}`;
}

// --- the page ----------------------------------------------------------------------

let UNIQUE = 0;
function uniqueId(prefix) {
  UNIQUE += 1;
  return `${prefix}-${UNIQUE}-${Math.random().toString(36).slice(2, 8)}`;
}

// element("div", {class: "a", text: "b"}, [children])
function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// A labelled number input; `onStep(direction)` handles the arrow keys when given.
function numberInput(labelText, className, options, onChange, onStep) {
  const id = uniqueId(className);
  const input = element("input", {
    type: "number", id, step: options.step, min: options.min, max: options.max, class: "course-number",
  });
  input.addEventListener("change", () => onChange(input.value));
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); onChange(input.value); return; }
    if (event.key !== "ArrowUp" && event.key !== "ArrowDown") return;
    event.preventDefault(); // the widget steps, so that the value always moves by a known amount
    event.stopPropagation(); // JupyterLab keeps the arrow keys for moving between cells
    const direction = event.key === "ArrowUp" ? 1 : -1;
    if (onStep) { onStep(direction); return; }
    const step = Number(input.step || options.step || 1);
    const decimals = Math.max(0, -Math.floor(Math.log10(step)));
    onChange((Number(input.value) + direction * step).toFixed(decimals));
  });
  const box = element("div", { class: `course-field ${className}` }, [
    element("label", { for: id, text: labelText }), input,
  ]);
  return { box, input };
}

// A fieldset of radio buttons (the arrow keys move between options, as in any browser).
function radioGroup(legend, className, options, onChange) {
  const name = uniqueId(className);
  const inputs = {};
  const items = options.map(([value, label]) => {
    const id = uniqueId(`${className}-option`);
    const input = element("input", { type: "radio", name, id, value, "data-value": value });
    input.addEventListener("change", () => { if (input.checked) onChange(value); });
    input.addEventListener("keydown", (event) => event.stopPropagation());
    inputs[value] = input;
    return element("div", { class: "course-option" }, [input, element("label", { for: id, text: label })]);
  });
  const box = element("fieldset", { class: `course-choice ${className}` }, [
    element("legend", { text: legend }), ...items,
  ]);
  return { box, inputs };
}

// A canvas of CSS size width x height, sharp on high-density screens.
function sharpCanvas(width, height, label) {
  const canvas = element("canvas", { role: "img", "aria-label": label });
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const context = canvas.getContext("2d");
  context.scale(ratio, ratio);
  return { canvas, context };
}

// Tick positions for an axis from lo to hi: multiples of 1, 2 or 5 times a power of ten.
function niceTicks(lo, hi, count = 6) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw) || 10 * power;
  const first = Math.ceil(lo / step - 1e-9);
  const ticks = [];
  for (let k = first; k * step <= hi + step * 1e-9; k++) ticks.push(Number((k * step).toPrecision(12)));
  return ticks;
}

const DASHES = { "-": [], "--": [7, 4], ":": [2, 3], "-.": [7, 3, 2, 3] };
