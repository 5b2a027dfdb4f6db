// The course's web site: mount the widgets from their saved state, search, hub links.
// Everything comes from this site; nothing is fetched from elsewhere. The build puts
// autodiff_course/widgets/static/saved_model.js (savedModel) in front of this file.

const STATIC = document.body.dataset.static;

async function mountWidgets() {
  for (const mount of document.querySelectorAll(".course-widget-mount")) {
    const state = JSON.parse(mount.querySelector(".course-widget-state").textContent);
    const module = await import(`${STATIC}/widgets/${mount.dataset.widget}.js`);
    const host = document.createElement("div");
    host.className = "course-widget-host";
    const still = [...mount.children].filter((child) => !child.matches("script"));
    still.forEach((child) => { child.hidden = true; });
    mount.append(host);
    module.default.render({ model: savedModel(state), el: host });
    mount.dataset.mounted = "true";
  }
}

function hubLinks() {
  for (const form of document.querySelectorAll("form.hub-launch")) {
    const input = form.querySelector("input");
    input.value = localStorage.getItem("course-hub") || "";
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const hub = input.value.trim().replace(/\/+$/, "");
      if (!/^https?:\/\//.test(hub)) { input.setCustomValidity("Give your hub's address, starting with https://"); input.reportValidity(); return; }
      input.setCustomValidity("");
      localStorage.setItem("course-hub", hub);
      window.location.href = `${hub}/hub/user-redirect/git-pull?${form.dataset.pull}`;
    });
  }
}

async function search() {
  const results = document.getElementById("search-results");
  if (!results) return;
  const status = document.getElementById("search-status");
  const query = new URLSearchParams(window.location.search).get("q") || "";
  document.getElementById("search-page-query").value = query;
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) { status.textContent = "Type words to find the sections that contain all of them."; return; }
  const root = document.body.dataset.root;
  const index = await (await fetch(`${root}/search-index.json`)).json();
  const found = [];
  for (const entry of index) {
    const haystack = `${entry.section} ${entry.text}`.toLowerCase();
    if (!words.every((word) => haystack.includes(word))) continue;
    const score = words.reduce((sum, word) => sum + haystack.split(word).length - 1 + (entry.section.toLowerCase().includes(word) ? 10 : 0), 0);
    found.push([score, entry]);
  }
  found.sort((a, b) => b[0] - a[0]);
  status.textContent = `${found.length} section${found.length === 1 ? "" : "s"} contain “${query}”.`;
  for (const [, entry] of found.slice(0, 50)) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = `${root}/${entry.url}`;
    link.textContent = `${entry.page}: ${entry.section}`;
    const at = entry.text.toLowerCase().indexOf(words[0]);
    const snippet = document.createElement("div");
    snippet.className = "search-snippet";
    snippet.textContent = (at > 40 ? "…" : "") + entry.text.slice(Math.max(0, at - 40), at + 160) + "…";
    item.append(link, snippet);
    results.append(item);
  }
}

mountWidgets();
hubLinks();
search();
