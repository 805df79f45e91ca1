/**
 * @module The trace UI's page, `GET /ui`: the frame the modules of `ui/app.js` fill in — a
 * header with the views' tabs and the API key form, an error banner, one `<section>` per
 * view. No inline script or style (the Content-Security-Policy forbids both); the assets
 * are relative (`ui/app.js`), so a server behind a path prefix serves them too.
 */

/** `/ui`. */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="no-referrer" />
    <title>axon trace</title>
    <link rel="icon" href="ui/icon.svg" type="image/svg+xml" />
    <link rel="stylesheet" href="ui/app.css" />
    <script type="module" src="ui/app.js"></script>
  </head>
  <body>
    <header class="bar">
      <span class="brand">axon <b>trace</b></span>
      <nav data-testid="nav">
        <a href="#runs" data-view="runs" data-testid="nav-runs">Runs</a>
        <a href="#threads" data-view="threads" data-testid="nav-threads">Threads</a>
      </nav>
      <div class="auth" data-testid="auth">
        <span class="muted" data-testid="auth-state" hidden></span>
        <button type="button" data-testid="auth-forget" hidden>forget key</button>
        <form data-testid="auth-form" hidden>
          <label for="auth-key" data-testid="auth-message">This server needs an API key:</label>
          <input id="auth-key" data-testid="auth-key" type="password" autocomplete="off"
                 spellcheck="false" placeholder="API key" required />
          <button type="submit" data-testid="auth-submit">Use key</button>
        </form>
      </div>
    </header>
    <p class="banner" data-testid="error-banner" role="alert" hidden></p>
    <main>
      <section data-testid="runs-view" hidden></section>
      <section data-testid="run-view" hidden></section>
      <section data-testid="threads-view" hidden></section>
      <section data-testid="thread-view" hidden></section>
    </main>
    <noscript>The trace UI needs JavaScript (no external script: it is all served by axon).</noscript>
  </body>
</html>
`;
