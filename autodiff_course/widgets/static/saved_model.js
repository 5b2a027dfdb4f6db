// A stand-in for a widget model, made from the state saved with a notebook: the calls a
// course widget's module makes (get, set, save_changes, on). Where no widget manager runs
// (the course's web site, JupyterLab's slide mode) a widget draws from it, live in the
// browser with no kernel behind it.
function savedModel(state) {
  const listeners = {};
  return {
    get: (key) => state[key],
    set(key, value) { state[key] = value; for (const f of listeners[`change:${key}`] || []) f(); },
    save_changes() {},
    on(event, callback) { (listeners[event] = listeners[event] || []).push(callback); },
    off() {},
    send() {},
  };
}
