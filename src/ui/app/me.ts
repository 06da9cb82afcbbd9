import { pathTo } from '../../api/route-table.js';
import type { Principal } from '../../runtime/wire/index.js';
import { get } from './api.js';

/**
 * Who the page is signed in as: named in the header, and its role set on the body, where the stylesheet hides
 * every control marked with a role it lacks (data-needs, the role of the control's route). The server refuses
 * such a request anyway; hiding it spares the user a 403.
 */
export async function showMe(): Promise<void> {
  const el = document.getElementById('me');
  try {
    const me = await get<Principal>(pathTo('me', {}));
    document.body.dataset.role = me.role;
    if (el) el.textContent = me.bootstrap ? 'bootstrap admin' : `${me.name} (${me.role})`;
  } catch {
    // signed out or unreachable: every control stays shown, and the server answers for itself
  }
}
