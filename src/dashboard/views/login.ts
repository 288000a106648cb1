import { html } from '../html';
import { page, type PageUser } from './layout';

const CREATE_USER_COMMAND = html`<code>npm run -s admin -- dashboard-user create</code>`;

export function loginPage(o: {
  csrf: string;
  next: string;
  email?: string;
  error?: string | null;
  notice?: string | null;
}): string {
  return page({
    title: 'Sign in',
    error: o.error,
    notice: o.notice,
    body: html`<form method="post" action="/dashboard/login" class="card narrow" novalidate>
<input type="hidden" name="_csrf" value="${o.csrf}">
<input type="hidden" name="next" value="${o.next}">
<p><label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${o.email ?? ''}" autofocus></p>
<p><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit">Sign in</button></p>
</form>
<p class="hint">Accounts are created by the service's administrators with ${CREATE_USER_COMMAND}.</p>`,
  });
}

/** Shown for errors inside the dashboard: the message is the domain's own, safe for operators. */
export function errorPage(o: {
  status: number;
  title: string;
  message: string;
  signedIn: boolean;
  user?: PageUser;
}): string {
  const href = o.signedIn ? '/dashboard' : '/dashboard/login';
  const label = o.signedIn ? 'Back to the dashboard' : 'Sign in';
  return page({
    title: o.title,
    user: o.user,
    error: o.message,
    body: html`<p><a href="${href}">${label}</a></p>`,
  });
}
