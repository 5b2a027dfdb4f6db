// Slide mode (jupyterlab-rise) has no widget manager, so it shows each widget's still
// picture. This script, part of that picture, swaps each one for the live widget, drawn
// from the state saved in the notebook. JupyterLab runs it only in a trusted notebook
// (one the learner ran and saved); elsewhere the still picture stays. Elsewhere than in
// slide mode it does nothing: JupyterLab draws the widget itself, the course's web site
// mounts its own, and a notebook viewer drops the script.
async function liveInSlides() {
  const config = document.getElementById("jupyter-config-data");
  const page = config ? JSON.parse(config.textContent) : {};
  if (!String(page.frontendUrl || "").endsWith("/rise/") || window.__courseSlidesLive) return;
  window.__courseSlidesLive = true;
  // The script runs as its output is drawn; the slides are built after every cell is.
  for (let wait = 0; !document.querySelector(".reveal .slides section"); wait += 200) {
    if (wait > 60000) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const path = page.notebookPath.split("/").filter(Boolean).map(encodeURIComponent).join("/");
  const reply = await fetch(`${page.baseUrl}api/contents/${path}?type=notebook&content=1`, {
    credentials: "same-origin", headers: page.token ? { Authorization: `token ${page.token}` } : {},
  });
  const notebook = (await reply.json()).content;
  const states = ((notebook.metadata.widgets || {})["application/vnd.jupyter.widget-state+json"] || {}).state || {};
  // The n-th still picture on the page is the n-th widget output with one in the notebook.
  const saved = [];
  for (const cell of notebook.cells) for (const output of cell.outputs || []) {
    const data = output.data || {};
    const html = [].concat(data["text/html"] || []).join("");
    const view = data["application/vnd.jupyter.widget-view+json"];
    if (view && html.includes("widget-still")) saved.push(states[view.model_id]);
  }
  const stills = [...document.querySelectorAll(".reveal .widget-still")];
  const styled = new Set();
  for (const [index, still] of stills.entries()) {
    const model = saved[index];
    if (!model || !model.state._esm) { still.dataset.live = "no saved state"; continue; }
    const state = structuredClone(model.state);
    if (state._css && !styled.has(state._css)) {
      styled.add(state._css);
      const style = document.createElement("style");
      style.textContent = state._css;
      document.head.append(style);
    }
    const url = URL.createObjectURL(new Blob([state._esm], { type: "text/javascript" }));
    const module = await import(url);
    const host = document.createElement("div");
    host.className = "widget-live-in-slides";
    still.after(host);
    still.hidden = true;
    module.default.render({ model: savedModel(state), el: host });
    still.dataset.live = "true";
  }
}
liveInSlides().catch((error) => console.warn("The widgets stay still pictures:", error));
