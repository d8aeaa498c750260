// dllm-viz: the first script of the page, before Gradio's own (app/early.py puts it first in the page's head).
//
// Gradio's page shows a status tracker ("Loading...") while the app loads and takes it away once the app is up, but
// that tracker's timer, a loop of animation frames, is never stopped: the page went on asking for a frame every
// 16 ms for as long as it was open (the browser's CPU on an idle page: ~60 ms a second more; a frame every 16 ms
// beside every decode). Until the page's own script says the app is up (page.js: `window.__dvAppUp()`), the only
// status tracker on the page is that loader, which shows no timer: a frame Gradio's status tracker asks for then is
// not asked for, so its loop never starts. Every other frame, and every tracker's once the app is up, is asked as
// before. A status tracker is known by its script's file (Gradio's `statustracker-<hash>.js`) in the call's stack.

(() => {
  if (window.__dvAppUp) return;
  const ask = window.requestAnimationFrame;
  let up = false;
  window.__dvAppUp = () => { up = true; };
  window.requestAnimationFrame = function requestAnimationFrame(callback) {
    if (!up && /\/statustracker-[^/]*\.js/.test(String(new Error().stack))) return 0;
    return ask.call(window, callback);
  };
})();
