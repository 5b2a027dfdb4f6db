// The Jacobian heatmap of lesson 05 (autodiff_course/widgets/jacobian_heatmap.py): draws
// the colours, titles and readout TensorFlow's Jacobians gave for the chosen view.

function render({ model, el }) {
  const layers = model.get("layers"), batches = model.get("batches"), views = model.get("views");
  let layer = model.get("layer"), batch = model.get("batch");
  const root = element("div", { class: "jacobian-heatmap course-widget", role: "group", "aria-label": "Jacobian heatmap" });
  const choice = radioGroup("layer", "jacobian-heatmap-layer", layers.map((l) => [l, l]), (l) => { layer = l; show(true); });
  const size = numberInput("batch", "jacobian-heatmap-batch", { min: batches[0], max: batches[batches.length - 1], step: 1 },
    (text) => choose(text), (direction) => { batch = Math.min(Math.max(batch + direction, batches[0]), batches[batches.length - 1]); show(true); });
  const message = element("p", { class: "course-message", role: "status", "aria-live": "polite", hidden: true });
  const WIDTH = 640, HEIGHT = 272;
  const { canvas, context } = sharpCanvas(WIDTH, HEIGHT, "");
  const picture = element("div", { class: "jacobian-heatmap-image" }, [canvas]);
  const readout = element("div", { "aria-live": "polite" });
  root.append(element("div", { class: "course-row" }, [choice.box, size.box]), message, picture, readout);
  el.append(root);

  function choose(text) {
    const wanted = Number(String(text).trim());
    if (!Number.isInteger(wanted)) { show(false, `batch must be a whole number, not “${text}”.`); return; }
    const clamped = Math.min(Math.max(wanted, batches[0]), batches[batches.length - 1]);
    batch = clamped;
    show(true, clamped === wanted ? "" : `batch ${wanted} is outside ${batches[0]} to ${batches[batches.length - 1]}: showing ${clamped}.`);
  }

  function draw(view) {
    const c = context;
    c.fillStyle = "#fff"; c.fillRect(0, 0, WIDTH, HEIGHT);
    c.fillStyle = "#000"; c.font = "13px sans-serif"; c.textAlign = "center"; c.textBaseline = "top";
    c.fillText(view.title, WIDTH / 2, 4);
    const rows = view.panels[0].colours.length, columns = view.panels[0].colours[0].length;
    const cell = Math.min(250 / columns, 200 / rows);
    view.panels.forEach((panel, p) => {
      const left = 40 + p * 290, top = 46;
      c.fillStyle = "#000"; c.font = "12px sans-serif"; c.textBaseline = "bottom";
      c.fillText(panel.title, left + (columns * cell) / 2, top - 4);
      panel.colours.forEach((row, i) => row.forEach((colour, j) => {
        c.fillStyle = colour || "#dddddd";
        c.fillRect(left + j * cell, top + i * cell, cell, cell);
      }));
      c.strokeStyle = "#000"; c.lineWidth = 1;
      c.strokeRect(left, top, columns * cell, rows * cell);
      c.textBaseline = "top";
      for (let b = 0; b < view.batch; b++) {
        if (b > 0) {
          c.beginPath(); c.moveTo(left, top + b * 2 * cell); c.lineTo(left + columns * cell, top + b * 2 * cell);
          c.moveTo(left + b * 3 * cell, top); c.lineTo(left + b * 3 * cell, top + rows * cell); c.stroke();
        }
        c.fillStyle = "#000"; c.textAlign = "center";
        c.fillText(`x[${b}]`, left + (b * 3 + 1.5) * cell, top + rows * cell + 3);
        c.textAlign = "right"; c.textBaseline = "middle";
        c.fillText(`y[${b}]`, left - 4, top + (b * 2 + 1) * cell);
        c.textBaseline = "top";
      }
    });
    // the colour scale
    const gradient = c.createLinearGradient(0, 0, 0, 200);
    gradient.addColorStop(0, "#67001f"); gradient.addColorStop(0.5, "#f7f7f7"); gradient.addColorStop(1, "#053061");
    c.fillStyle = gradient; c.fillRect(606, 46, 12, 200);
    c.fillStyle = "#000"; c.textAlign = "right"; c.textBaseline = "middle"; c.font = "11px sans-serif";
    c.fillText(view.scale[2], 638, 40); c.fillText(view.scale[0], 638, 254);
  }

  function show(send, note = "") {
    const view = views[`${layer}/${batch}`];
    for (const [value, input] of Object.entries(choice.inputs)) input.checked = value === layer;
    size.input.value = String(batch);
    message.textContent = note; message.hidden = !note;
    draw(view);
    canvas.setAttribute("aria-label", view.alt);
    readout.innerHTML = view.readout;
    root.dataset.renderCount = String(Number(root.dataset.renderCount || 0) + 1);
    if (send) {
      sending = true;
      model.set("layer", layer); model.set("batch", batch); model.save_changes();
      sending = false;
    }
  }
  let sending = false;
  for (const key of ["layer", "batch"]) model.on(`change:${key}`, () => {
    if (sending || (model.get("layer") === layer && model.get("batch") === batch)) return;
    layer = model.get("layer"); batch = model.get("batch"); show(false);
  });
  show(false);
}

export default { render };
