// Small behaviours for dashboard forms: copy buttons, confirmations, and regions that refresh
// themselves (the webhook delivery log) without a full page reload.

for (const input of document.querySelectorAll('[data-select-on-focus]')) {
  input.addEventListener('focus', () => input.select());
}

for (const button of document.querySelectorAll('[data-copy]')) {
  button.addEventListener('click', async () => {
    const input = document.getElementById(button.dataset.copy);
    if (!input) return;
    input.focus();
    input.select();
    try {
      await navigator.clipboard.writeText(input.value);
      button.textContent = 'Copied';
    } catch {
      // No clipboard permission (plain HTTP, say): the text is selected for a manual copy.
      button.textContent = 'Selected: press Ctrl+C';
    }
  });
}

// A long id cut short in a table cell: the button copies the whole value, or selects it for Ctrl+C.
for (const button of document.querySelectorAll('[data-copy-text]')) {
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(button.dataset.copyText);
      button.textContent = 'Copied';
    } catch {
      const text = button.previousElementSibling;
      if (text) window.getSelection()?.selectAllChildren(text);
      button.textContent = 'Selected';
    }
  });
}

for (const form of document.querySelectorAll('form[data-confirm]')) {
  form.addEventListener('submit', (e) => {
    if (!window.confirm(form.dataset.confirm)) e.preventDefault();
  });
}

for (const region of document.querySelectorAll('[data-refresh]')) {
  const every = Number(region.dataset.refreshMs) || 3000;
  let last = null;
  let timer = null;
  const refresh = async () => {
    // Never pull content out from under a keyboard user, nor poll a hidden tab.
    if (document.hidden || region.contains(document.activeElement)) return;
    try {
      const res = await fetch(region.dataset.refresh, { credentials: 'same-origin', redirect: 'error' });
      // Signed out (or the session ended): stop polling; the next click leads to the sign-in page.
      if (res.status === 401) clearInterval(timer);
      if (!res.ok) return;
      const html = await res.text();
      if (html !== last) {
        last = html;
        region.innerHTML = html;
      }
    } catch {
      // The next tick tries again.
    }
  };
  timer = setInterval(refresh, every);
}
