// The chain-rule explorer of lesson 01 (autodiff_course/widgets/chain_rule.py): shows
// the row TensorFlow computed for the chosen x.

function render({ model, el }) {
  const points = model.get("points");
  let index = model.get("index");
  const root = element("div", { class: "chain-rule-explorer course-widget", role: "group", "aria-label": "chain-rule explorer" });
  const x = numberInput("x", "chain-rule-x", { min: points[0], max: points[points.length - 1], step: points[1] - points[0] },
    (text) => choose(text), (direction) => move(direction));
  const message = element("p", { class: "course-message", role: "status", "aria-live": "polite", hidden: true });
  const readout = element("div", { class: "chain-rule-readout-host", "aria-live": "polite" });
  root.append(x.box, message, readout);
  el.append(root);

  function show(note = "") {
    x.input.value = points[index].toFixed(2);
    message.textContent = note;
    message.hidden = !note;
    readout.innerHTML = model.get("readouts")[index];
    root.dataset.renderCount = String(Number(root.dataset.renderCount || 0) + 1);
  }
  function send() { model.set("index", index); model.save_changes(); }
  function move(direction) {
    index = Math.min(Math.max(index + direction, 0), points.length - 1);
    show(); send();
  }
  function choose(text) {
    const wanted = Number(String(text).trim());
    if (String(text).trim() === "" || Number.isNaN(wanted)) { show(`x must be a number, not “${text}”.`); return; }
    let best = 0;
    points.forEach((point, i) => { if (Math.abs(point - wanted) < Math.abs(points[best] - wanted)) best = i; });
    index = best;
    show(points[best] === wanted ? "" : `x = ${wanted} is not tabulated: showing the nearest, x = ${points[best].toFixed(2)}.`);
    send();
  }
  model.on("change:index", () => { if (model.get("index") !== index) { index = model.get("index"); show(); } });
  show();
}

export default { render };
