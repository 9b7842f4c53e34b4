// A hash router: pages live at #/path?query so that the server serves
// one HTML page and links survive reloads.
import { useEffect, useState } from 'react';

export function parseHash(hash) {
  const h = (hash || '').replace(/^#/, '') || '/';
  const q = h.indexOf('?');
  const path = q < 0 ? h : h.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : h.slice(q + 1));
  return { path, params: Object.fromEntries(params) };
}

export function useRoute() {
  const [route, setRoute] = useState(parseHash(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

// href builds a link to a page with parameters.
export function href(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ''}`;
}

export function navigate(path, params) {
  window.location.hash = href(path, params);
}
