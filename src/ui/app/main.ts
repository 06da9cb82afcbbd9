import { type DevState, type Live, onSignInNeeded, sessionFromHash, startSession } from './api.js';
import { auditPage } from './audit.js';
import { definitionsPage } from './definitions.js';
import { askToken } from './dialog.js';
import { eventsPage } from './events.js';
import { listPage } from './list.js';
import { showMe } from './me.js';
import { pausesPage } from './pauses.js';
import { workflowPage } from './workflow.js';

const app = document.getElementById('app')!;
const banner = document.getElementById('banner')!;
let current: Live | undefined;
let signingIn: Promise<void> | undefined;

// a sign-in may be another user's: the header and what is shown follow it
onSignInNeeded(
  () =>
    (signingIn ??= askToken(startSession).finally(() => {
      signingIn = undefined;
      void showMe();
    })),
);

/** The hot-reload banner: a broken save keeps the last good version, and says so until it is fixed. */
export function showDevState(dev: DevState): void {
  const problems: string[] = [];
  const d = dev.definitions;
  if (d && !d.ok) {
    if (d.error) problems.push(`Definitions could not be loaded: ${d.error}.`);
    for (const f of d.failing)
      problems.push(`${f.file} has errors: ${f.name ? `the last good version of ${f.name} stays current` : 'it is not registered until it is valid'}.`);
  }
  if (dev.handlers && !dev.handlers.ok) problems.push(`Handlers failed to load (${dev.handlers.error}): the previous handlers stay in use.`);
  banner.hidden = problems.length === 0;
  banner.replaceChildren(...problems.map((p) => Object.assign(document.createElement('p'), { textContent: p })));
  banner.dataset.testid = 'reload-banner';
}

function route(): void {
  current?.close();
  const params = new URLSearchParams(location.search);
  const path = location.pathname;
  const wf = /^\/workflows\/([^/]+)$/.exec(path);
  if (wf) current = workflowPage(app, decodeURIComponent(wf[1]), params);
  else if (path === '/definitions') current = definitionsPage(app, params);
  else if (path === '/pauses') current = pausesPage(app);
  else if (path === '/events') current = eventsPage(app, params);
  else if (path === '/audit') current = auditPage(app, params);
  else current = listPage(app, params);
}

document.addEventListener('click', (e) => {
  const a = (e.target as Element).closest('a[data-link]');
  if (!a || e.defaultPrevented || (e as MouseEvent).metaKey || (e as MouseEvent).ctrlKey || (e as MouseEvent).button !== 0) return;
  e.preventDefault();
  history.pushState(null, '', a.getAttribute('href')!);
  route();
});
window.addEventListener('popstate', route);

// every stream reports the dev state; the banner shows it on every page
window.addEventListener('braid-dev', (e) => showDevState((e as CustomEvent<DevState>).detail));

void sessionFromHash().then(() => {
  route();
  void showMe();
});
