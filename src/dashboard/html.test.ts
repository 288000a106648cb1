import { describe, expect, it } from 'vitest';
import { escapeHtml, html, jsonScript, queryString, trusted } from './html';

describe('html templates', () => {
  it('escapes every interpolated value, in content and in attributes', () => {
    const name = `<img src=x onerror="alert('x')">&\``;
    expect(html`<p title="${name}">${name}</p>`.value).toBe(
      '<p title="&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;&#96;">' +
        '&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt;&amp;&#96;</p>',
    );
  });

  it('does not escape twice what is already markup, and joins arrays', () => {
    const items = ['a<b', 'c&d'].map((x) => html`<li>${x}</li>`);
    expect(html`<ul>${items}</ul>`.value).toBe('<ul><li>a&lt;b</li><li>c&amp;d</li></ul>');
    expect(html`${trusted('<br>')}`.value).toBe('<br>');
  });

  it('renders nothing for null, undefined and false, and numbers as text', () => {
    expect(html`[${null}${undefined}${false}${0}${12.5}]`.value).toBe('[012.5]');
  });

  it('keeps JSON data blocks from closing their script element', () => {
    const out = jsonScript('data', { text: '</script><script>alert(1)</script>', line: '\u2028' }).value;
    expect(out).toBe(
      '<script type="application/json" id="data">' +
        '{"text":"\\u003c/script>\\u003cscript>alert(1)\\u003c/script>","line":"\\u2028"}</script>',
    );
    expect(JSON.parse(out.slice(out.indexOf('>') + 1, out.lastIndexOf('</script>')))).toEqual({
      text: '</script><script>alert(1)</script>',
      line: '\u2028',
    });
  });

  it('builds query strings from the filled-in filters only', () => {
    expect(queryString({ player: 'p 1&x', round: '', status: undefined, page: 2 })).toBe('?player=p+1%26x&page=2');
    expect(queryString({ a: null })).toBe('');
    expect(escapeHtml('plain')).toBe('plain');
  });
});
