// The browser test of one HTML report (tests/html/README.md): opens the page in
// headless Chromium (puppeteer-core from web/node_modules) with every network
// request refused, and checks what a reader would see: the page opens without
// errors and in time, the canvas shows each layer's colours, the colour bars
// give the run's numbers, the toggles and the point-size slider act on the
// drawing, and what the report's kind promises (slices, lines, a key, curves).
//
// usage: node check_report.mjs REPORT.html [--spec FILE.json] [options]
// Options (each overrides the spec file's field named after it, in camelCase):
//   --max-open-ms N        fail when the page takes longer to be ready (from navigation)
//   --open-tries N         over --max-open-ms, open it again up to N times in all; the fastest counts (3)
//   --max-bytes N          fail when the file is larger
//   --min-pixels N         the pixels each layer's colour must cover (default 30)
//   --colorbar LAYER=PATH  the colour bar of LAYER spans the result's PATH.min..PATH.max
//                          (PATH: keys joined by '.', e.g. distance_to_target); repeatable
//   --result FILE          the JSON the colour bars are checked against, instead of the page's result
//                          (a page without one: ptreg view's, against the registration's --json)
//   --kind KIND[=N]        at least N (1) layers of KIND (points, lines, paths, slice); repeatable
//   --layer NAME           a layer so named, not empty; repeatable
//   --key                  the colour key is drawn
//   --curves N             at least N curves drawn
//   --no-toggles, --no-point-size   leave those checks out
//   --screenshot FILE      the canvas as first drawn, as PNG (kept for a failure's reader)
//   --chromium PATH        the browser (default: $PTREG_CHROMIUM, else chromium on PATH)
// Exit: 0 passed, 1 a check failed (each failure on stderr, naming the report and the check),
// 2 usage, 77 no Chromium or no puppeteer-core (CTest's skip).
import { createRequire } from 'node:module';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SKIP = 77;
const HERE = path.dirname(fileURLToPath(import.meta.url));
const WEB = path.resolve(HERE, '../../web');
// Per channel: points are flat squares without lighting, so their pixels are
// the layer's sRGB colour to within rounding of the linear-light round trip.
const TOLERANCE = 3;

function usageError(message) {
  console.error(`check_report: ${message} (usage in the header of ${path.basename(fileURLToPath(import.meta.url))})`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { colorbars: [], kinds: {}, layers: [] };
  let report = null, spec = null;
  const cli = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usageError(`${a} needs a value`));
    const number = () => {
      const v = Number(value());
      return Number.isFinite(v) ? v : usageError(`${a} needs a number`);
    };
    if (a === '--spec') spec = value();
    else if (a === '--max-open-ms') cli.maxOpenMs = number();
    else if (a === '--open-tries') cli.openTries = number();
    else if (a === '--max-bytes') cli.maxBytes = number();
    else if (a === '--min-pixels') cli.minPixels = number();
    else if (a === '--colorbar') {
      const [layer, result] = value().split('=');
      if (!result) usageError('--colorbar wants LAYER=PATH');
      o.colorbars.push({ layer, result });
    } else if (a === '--kind') {
      const [kind, n] = value().split('=');
      o.kinds[kind] = n === undefined ? 1 : Number(n);
    } else if (a === '--layer') o.layers.push(value());
    else if (a === '--key') cli.key = true;
    else if (a === '--curves') cli.curves = number();
    else if (a === '--no-toggles') cli.toggles = false;
    else if (a === '--no-point-size') cli.pointSize = false;
    else if (a === '--screenshot') cli.screenshot = value();
    else if (a === '--result') cli.result = value();
    else if (a === '--chromium') cli.chromium = value();
    else if (a.startsWith('--')) usageError(`unknown option ${a}`);
    else if (report === null) report = a;
    else usageError(`one report at a time (${report}, ${a})`);
  }
  if (report === null) usageError('no report given');
  const fromSpec = spec ? JSON.parse(readFileSync(spec, 'utf8')) : {};
  return {
    report: path.resolve(report),
    minPixels: 30, openTries: 3, toggles: true, pointSize: true, key: false, curves: 0,
    ...fromSpec, ...cli,
    colorbars: [...(fromSpec.colorbars ?? []), ...o.colorbars],
    kinds: { ...(fromSpec.kinds ?? {}), ...o.kinds },
    layers: [...(fromSpec.layers ?? []), ...o.layers],
  };
}

function findChromium(given) {
  const candidates = given ? [given] : process.env.PTREG_CHROMIUM ? [process.env.PTREG_CHROMIUM] : [];
  if (!given && !process.env.PTREG_CHROMIUM)
    for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/bin']))
      for (const name of ['chromium', 'chromium-browser', 'google-chrome'])
        candidates.push(path.join(dir, name));
  return candidates.find((p) => existsSync(p)) ?? null;
}

async function loadPuppeteer() {
  try {
    // resolved from web/, where `make deps` installs it: this folder has no node_modules
    const entry = createRequire(path.join(WEB, 'package.json')).resolve('puppeteer-core');
    return (await import(pathToFileURL(entry).href)).default;
  } catch {
    return null;
  }
}

// In the page: the counts of a picture's pixels (RGBA bytes) that are not the
// white background, that are each given colour, and that lie on the colour
// map (the gradient stops as the colour bar draws them) without being one of
// the given colours.
function countPixels(data, colors, mapStops, tolerance) {
  const near = (i, c) => Math.abs(data[i] - c[0]) <= tolerance && Math.abs(data[i + 1] - c[1]) <= tolerance
    && Math.abs(data[i + 2] - c[2]) <= tolerance;
  const cacheKey = JSON.stringify([mapStops, tolerance]);
  let onMap = null;
  if (window.ptregOnMap?.key === cacheKey) onMap = window.ptregOnMap.bits;
  else if (mapStops.length > 1) {
    // every colour within the tolerance of the map, as a bit per 24-bit
    // colour; kept in the page for the next count
    onMap = new Uint8Array(1 << 21);
    window.ptregOnMap = { key: cacheKey, bits: onMap };
    const steps = 4096;
    for (let s = 0; s <= steps; s++) {
      const x = (s / steps) * (mapStops.length - 1), k = Math.min(mapStops.length - 2, Math.floor(x)), f = x - k;
      const c = [0, 1, 2].map((j) => Math.round(mapStops[k][j] + f * (mapStops[k + 1][j] - mapStops[k][j])));
      for (let dr = -tolerance; dr <= tolerance; dr++)
        for (let dg = -tolerance; dg <= tolerance; dg++)
          for (let db = -tolerance; db <= tolerance; db++) {
            const r = c[0] + dr, g = c[1] + dg, b = c[2] + db;
            if (r < 0 || g < 0 || b < 0 || r > 255 || g > 255 || b > 255) continue;
            const key = (r << 16) | (g << 8) | b;
            onMap[key >> 3] |= 1 << (key & 7);
          }
    }
  }
  const out = { pixels: data.length / 4, nonBackground: 0, colors: colors.map(() => 0), map: 0 };
  for (let i = 0; i < data.length; i += 4) {
    if (data[i] >= 255 - tolerance && data[i + 1] >= 255 - tolerance && data[i + 2] >= 255 - tolerance) continue;
    out.nonBackground++;
    let matched = false;
    for (let k = 0; k < colors.length; k++)
      if (near(i, colors[k])) { out.colors[k]++; matched = true; }
    if (!matched && onMap) {
      const key = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
      if (onMap[key >> 3] & (1 << (key & 7))) out.map++;
    }
  }
  return out;
}

const hexRgb = (hex) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));

// The value at a dotted path of an object, or undefined.
const at = (object, dotted) => dotted.split('.').reduce((o, k) => (o == null ? undefined : o[k]), object);

// Equal as single-precision values are: the bars are of float data.
const floatEqual = (a, b) => a === b || Math.abs(a - b) <= 2 ** -23 * Math.max(Math.abs(a), Math.abs(b));

async function main() {
  const opt = parseArgs(process.argv.slice(2));
  const name = path.basename(opt.report);
  const failures = [];
  const fail = (check, message) => failures.push(`${name}: ${check}: ${message}`);
  const note = (message) => console.log(`${name}: ${message}`);

  if (!existsSync(opt.report)) usageError(`${opt.report}: no such file`);
  const chromium = findChromium(opt.chromium);
  if (!chromium) {
    console.log('SKIP: no Chromium found (the Debian package `chromium`; `make test-deps` installs it, '
      + 'or give --chromium PATH / PTREG_CHROMIUM)');
    process.exit(SKIP);
  }
  const puppeteer = await loadPuppeteer();
  if (!puppeteer) {
    console.log(`SKIP: puppeteer-core is not installed in ${WEB}/node_modules (\`make deps\` installs it)`);
    process.exit(SKIP);
  }

  const bytes = statSync(opt.report).size;
  note(`${(bytes / 1e6).toFixed(2)} MB`);
  if (opt.maxBytes !== undefined && bytes > opt.maxBytes)
    fail('size', `${bytes} bytes, over the limit of ${opt.maxBytes}`);

  const tLaunch = performance.now();
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: chromium, headless: true,
      // WebGL2 without a GPU: SwiftShader, Chromium's software renderer
      args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--disable-dev-shm-usage',
        '--no-first-run', '--no-default-browser-check'],
    });
  } catch (e) {
    console.error(`FAIL: ${name}: launch: ${chromium} did not start: ${e.message}`);
    process.exit(1);
  }
  try {
    note(`Chromium started in ${(performance.now() - tLaunch).toFixed(0)} ms`);
    const refused = [], consoleErrors = [], pageErrors = [];
    const newPage = async () => {
      const p = await browser.newPage();
      await p.setViewport({ width: 1200, height: 700, deviceScaleFactor: 1 });
      p.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
      p.on('pageerror', (e) => pageErrors.push(e.message ?? String(e)));
      p.on('error', (e) => pageErrors.push(`page crashed: ${e.message}`));
      p.on('requestfailed', (r) => {
        if (!refused.includes(r.url())) pageErrors.push(`request failed: ${r.url()} (${r.failure()?.errorText})`);
      });
      await p.setRequestInterception(true);
      p.on('request', (r) => {
        // the page must stand alone: its own file and what it makes itself
        if (/^(file|data|blob):/.test(r.url())) r.continue();
        else { refused.push(r.url()); r.abort('blockedbyclient'); }
      });
      // the page's own clock at ready: the time to open without the driver's round trips
      await p.evaluateOnNewDocument(() => {
        new MutationObserver((_, o) => {
          if (document.body?.dataset.ready === '1') { window.ptregReadyAt = performance.now(); o.disconnect(); }
        }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-ready'] });
      });
      return p;
    };

    // A reader's browser has its GPU process up: start Chromium's (SwiftShader)
    // before the clock starts, so that the time measured is the page's own.
    let page = await newPage();
    await page.goto('data:text/html,<canvas id=c></canvas><script>gl=c.getContext("webgl2")</script>');
    if (!(await page.evaluate(() => !!window.gl))) {
      fail('webgl', `${chromium} gives no WebGL2 context (SwiftShader missing?): no page can be drawn`);
      throw new Error('no WebGL2');
    }
    note(`warmed up in ${(performance.now() - tLaunch).toFixed(0)} ms`);
    // Over the time limit, the page is opened again in a new tab, up to
    // --open-tries times in all, and the fastest counts: on a machine shared
    // with other tests one opening can be slowed by them, not by the page.
    let openMs = Infinity;
    for (let attempt = 1; ; attempt++) {
      const t = performance.now();
      await page.goto(pathToFileURL(opt.report).href, { waitUntil: 'domcontentloaded', timeout: 30000 });
      let ready = true;
      await page.waitForSelector('body[data-ready="1"]', { timeout: 30000 }).catch(() => { ready = false; });
      const ms = performance.now() - t;
      ready = ready && (await page.evaluate(() => window.ptregReport?.ready === true));
      if (!ready) {
        fail('open', 'window.ptregReport.ready never became true within 30 s');
        throw new Error('not ready');
      }
      const inPage = await page.evaluate(() => window.ptregReadyAt);
      note(`ready in ${ms.toFixed(0)} ms (${inPage?.toFixed(0)} ms by the page's clock)`);
      openMs = Math.min(openMs, ms);
      if (opt.maxOpenMs === undefined || openMs <= opt.maxOpenMs || attempt >= opt.openTries) break;
      await page.close();
      page = await newPage();
    }
    if (opt.maxOpenMs !== undefined && openMs > opt.maxOpenMs)
      fail('open time', `${openMs.toFixed(0)} ms to ready at best of ${opt.openTries}, over the limit of `
        + `${opt.maxOpenMs} ms`);
    const tChecks = performance.now();

    const info = await page.evaluate(() => {
      const bar = document.querySelector('.colorbar .bar');
      return {
        layers: window.ptregReport.layers, colorbars: window.ptregReport.colorbars,
        description: window.ptregReport.description,
        barCss: bar ? bar.style.background || getComputedStyle(bar).backgroundImage : '',
        checkboxes: window.ptregReport.layers.map((_, i) => !!document.getElementById(`ptreg-layer-${i}`)),
      };
    });
    const { layers, description } = info;
    // the colour map as the page's colour bar shows it
    const mapStops = [...info.barCss.matchAll(/rgb\((\d+),\s*(\d+),\s*(\d+)\)/g)].map((m) => m.slice(1, 4).map(Number));
    note(`layers: ${layers.map((l) => `${l.name} (${l.kind}${l.color ? ' ' + l.color : ''})`).join(', ')}`);
    if (layers.length !== description.layers.length)
      fail('layers', `${layers.length} layers in the viewer, ${description.layers.length} in the page's description`);
    info.checkboxes.forEach((has, i) => { if (!has) fail('layers', `layer ${i} has no checkbox #ptreg-layer-${i}`); });

    const uniform = layers.map((l, i) => ({ ...l, i })).filter((l) => l.color);
    const colors = uniform.map((l) => hexRgb(l.color));
    const valued = description.layers.map((l, i) => ({ ...l, i })).filter((l) => l.values !== undefined);
    if (valued.length && mapStops.length < 2) fail('colour bar', 'a layer has values but the page shows no colour bar');

    // the counter, defined in the page once (its source as text: it runs there)
    await page.evaluate(`window.ptregCountPixels = ${countPixels}`);
    // the drawing buffer (kept: preserveDrawingBuffer) read with the page's
    // own context, counted in the page: a screenshot or a 2-D canvas copy takes
    // several times longer under SwiftShader, and the toggles need many counts
    const measure = () => page.evaluate((cols, stops, tol) => {
      const gl = document.querySelector('#ptreg-view canvas').getContext('webgl2');
      const w = gl.drawingBufferWidth, h = gl.drawingBufferHeight, d = new Uint8Array(4 * w * h);
      gl.bindFramebuffer(gl.FRAMEBUFFER, null);
      gl.readPixels(0, 0, w, h, gl.RGBA, gl.UNSIGNED_BYTE, d);
      return window.ptregCountPixels(d, cols, stops, tol);
    }, colors, mapStops, TOLERANCE);

    // (a) the canvas as the screen shows it: a screenshot, decoded in the page
    const canvas = await page.$('#ptreg-view canvas');
    const png = await canvas.screenshot({ encoding: 'base64' });
    if (opt.screenshot) writeFileSync(opt.screenshot, Buffer.from(png, 'base64'));
    const shot = await page.evaluate(async (b64, cols, stops, tol) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.naturalWidth; c.height = img.naturalHeight;
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      return window.ptregCountPixels(ctx.getImageData(0, 0, c.width, c.height).data, cols, stops, tol);
    }, png, colors, mapStops, TOLERANCE);
    note(`screenshot: ${shot.nonBackground} of ${shot.pixels} pixels drawn; `
      + uniform.map((l, k) => `${l.name} ${shot.colors[k]}`).concat(valued.length ? [`colour map ${shot.map}`] : [])
        .join(', '));
    if (shot.nonBackground < opt.minPixels)
      fail('drawn', `only ${shot.nonBackground} pixels differ from the background`);

    // What a layer draws, counted: its colour, the colour map's for values,
    // any colour for per-point colours and slices. An empty layer (nothing
    // of its kind in this run, e.g. no frame lost) is not looked for; a points
    // layer of few points may cover fewer pixels than --min-pixels.
    const drawnBy = (m, l) => (l.color ? m.colors[uniform.findIndex((u) => u.i === l.i)]
      : description.layers[l.i].values !== undefined ? m.map : m.nonBackground);
    const all = layers.map((l, i) => ({ ...l, i }));
    const wanted = (l) => (l.kind === 'slice' ? opt.minPixels : l.kind === 'points' ? Math.min(opt.minPixels, l.count)
      : l.count > 0 ? opt.minPixels : 0);
    // A layer hidden behind others (lines inside a cloud) is looked at alone:
    // the others hidden through the page's API for the while.
    const alone = async (i, fn) => {
      await page.evaluate((k) => window.ptregReport.layers.forEach((_, j) => j !== k
        && window.ptregReport.setVisible(j, false)), i);
      try { return await fn(); } finally {
        await page.evaluate(() => window.ptregReport.layers.forEach((_, j) => window.ptregReport.setVisible(j, true)));
      }
    };
    const occluded = new Set();
    for (const l of all.filter((x) => x.color || description.layers[x.i].values !== undefined)) {
      const want = wanted(l);
      if (!want || drawnBy(shot, l) >= want) continue;
      const by = await alone(l.i, () => measure().then((m) => drawnBy(m, l)));
      if (by >= want) {
        occluded.add(l.i);
        note(`layer '${l.name}' hidden behind the others: ${by} pixels alone`);
      } else {
        fail('drawn', `layer '${l.name}': ${by} pixels of its ${l.color ? `colour ${l.color}` : 'colour map'}, `
          + `even alone (want >= ${want})`);
      }
    }

    // (b) the colour bars against the run's JSON
    const bars = await page.evaluate(() => [...document.querySelectorAll('.colorbar')].map((e) => ({
      title: e.firstChild?.textContent ?? '',
      min: e.querySelector('.colorbar-min')?.dataset.value, max: e.querySelector('.colorbar-max')?.dataset.value,
    })));
    for (const want of opt.colorbars) {
      const bar = bars.find((b) => b.title.startsWith(`${want.layer}:`));
      const truth = at(opt.result ? JSON.parse(readFileSync(opt.result, 'utf8')) : description.result, want.result);
      if (!bar) { fail('colour bar', `no colour bar for layer '${want.layer}'`); continue; }
      if (!truth || typeof truth.min !== 'number' || typeof truth.max !== 'number') {
        fail('colour bar', `the result has no ${want.result}.min/max`);
        continue;
      }
      let same = true;
      for (const end of ['min', 'max']) {
        if (bar[end] !== undefined && floatEqual(Number(bar[end]), truth[end])) continue;
        same = false;
        fail('colour bar', `'${want.layer}' ${end} is ${bar[end]}, `
          + `the result's ${want.result}.${end} is ${truth[end]}`);
      }
      if (same) note(`colour bar '${want.layer}': ${bar.min} .. ${bar.max} (= ${want.result})`);
    }

    // (c) a real click on each layer's checkbox hides what it drew; another brings it back
    if (opt.toggles) {
      for (const l of all) {
        if (!wanted(l)) { note(`layer '${l.name}' is empty`); continue; }
        // another layer may draw this colour too: one of the same colour, a
        // slice (grey levels) for a grey, a layer of per-point colours for any
        const grey = l.color && /^#(..)\1\1$/.test(l.color);
        const shared = l.color && (uniform.some((u) => u.i !== l.i && u.color === l.color)
          || layers.some((o) => o.kind === 'slice' && grey)
          || description.layers.some((o) => o.colors !== undefined));
        const toggle = async () => {
          const was = drawnBy(await measure(), l);
          await page.click(`#ptreg-layer-${l.i}`);
          const off = await measure();
          const checked = await page.$eval(`#ptreg-layer-${l.i}`, (e) => e.checked);
          await page.click(`#ptreg-layer-${l.i}`);
          const on = await measure();
          return { was, gone: drawnBy(off, l), back: drawnBy(on, l), checked };
        };
        const { was, gone, back, checked } = occluded.has(l.i) ? await alone(l.i, toggle) : await toggle();
        note(`toggle '${l.name}'${occluded.has(l.i) ? ' (alone)' : ''}: ${was} -> ${gone} -> ${back} pixels`);
        if (checked) fail('toggle', `layer '${l.name}': its checkbox is still checked after a click`);
        // what the layer alone drew goes; another layer of its colour (or
        // colours, for per-point colours and slices) may still show
        if (l.color && !shared ? gone > 0 : gone >= was)
          fail('toggle', `layer '${l.name}': ${gone} of its ${was} pixels left after unchecking it`);
        if (Math.abs(back - was) > 0.01 * was)
          fail('toggle', `layer '${l.name}': ${back} pixels after checking it again, ${was} before`);
      }
    }

    // (d) the point-size slider, by keyboard (End: largest, Home: smallest),
    // on the points alone: slices and lines hidden for the while (a slice
    // covers far more pixels than a few keypoints)
    if (opt.pointSize && layers.some((l) => l.kind === 'points')) {
      const slider = await page.$('#ptreg-point-size');
      if (!slider) fail('point size', 'no #ptreg-point-size slider');
      else {
        const others = all.filter((l) => l.kind !== 'points').map((l) => l.i);
        await page.evaluate((hide) => hide.forEach((j) => window.ptregReport.setVisible(j, false)), others);
        const first = await measure();
        const start = await slider.evaluate((e) => e.value);
        await slider.focus();
        await page.keyboard.press('End');
        const big = await measure();
        await page.keyboard.press('Home');
        const small = await measure();
        // back to where it was, as a reader would: the arrow keys, one step each
        for (let k = 0; k < 40 && (await slider.evaluate((e) => e.value)) !== start; k++)
          await page.keyboard.press('ArrowRight');
        const again = await measure();
        await page.evaluate((hide) => hide.forEach((j) => window.ptregReport.setVisible(j, true)), others);
        note(`point size${others.length ? ' (points alone)' : ''}: ${first.nonBackground} pixels at ${start}, `
          + `${big.nonBackground} at the largest, ${small.nonBackground} at the smallest, `
          + `${again.nonBackground} back at ${start}`);
        // a dense cloud's silhouette is nearly full at the start: the largest
        // size adds its rim, the smallest opens gaps
        if (!(big.nonBackground > first.nonBackground && small.nonBackground < first.nonBackground
              && big.nonBackground > 1.3 * small.nonBackground))
          fail('point size', `${small.nonBackground}, ${first.nonBackground}, ${big.nonBackground} pixels drawn `
            + 'at the smallest, the first and the largest size: want each more than the one before, the largest '
            + '1.3 times the smallest');
        if (again.nonBackground !== first.nonBackground)
          fail('point size', `back at ${start}: ${again.nonBackground} pixels, ${first.nonBackground} before`);
      }
    }

    // (e) what the report's kind promises
    for (const [kind, n] of Object.entries(opt.kinds)) {
      const have = layers.filter((l) => l.kind === kind).length;
      if (have < n) fail('kinds', `${have} layers of kind '${kind}', want at least ${n}`);
    }
    for (const name of opt.layers) {
      const l = layers.find((x) => x.name === name);
      if (!l) fail('layers', `no layer named '${name}'`);
      else if (l.kind !== 'slice' && !(l.count > 0)) fail('layers', `layer '${name}' is empty`);
    }
    const panel = await page.evaluate(() => {
      const key = document.getElementById('ptreg-key');
      let keyPixels = 0;
      if (key) {
        const d = key.getContext('2d').getImageData(0, 0, key.width, key.height).data;
        for (let i = 3; i < d.length; i += 4) keyPixels += d[i] > 0;
      }
      const json = document.getElementById('ptreg-json');
      return {
        keyPixels, hasKey: !!key, rows: document.querySelectorAll('#ptreg-numbers tr').length,
        json: json ? json.textContent : null, shown: document.getElementById('ptreg-shown')?.textContent ?? '',
        curves: [...document.querySelectorAll('svg polyline')].filter((p) => p.getAttribute('points')).length,
      };
    });
    if (panel.hasKey) note(`key: ${panel.keyPixels} pixels drawn`);
    if (opt.key && !(panel.keyPixels > 100))
      fail('key', panel.hasKey ? `the key canvas has ${panel.keyPixels} pixels drawn` : 'no #ptreg-key canvas');
    if (panel.curves < opt.curves) fail('curves', `${panel.curves} curves drawn, want at least ${opt.curves}`);
    if (!panel.shown) fail('shown', 'no #ptreg-shown note of the points shown');
    if (description.result) {
      if (!panel.rows) fail('numbers', 'the result has no rows in #ptreg-numbers');
      let same = false;
      try {
        same = JSON.stringify(JSON.parse(panel.json)) === JSON.stringify(description.result);
      } catch { /* not JSON: not the same */ }
      if (!same) fail('numbers', '#ptreg-json is not the run\'s JSON');
    }

    note(`checks took ${(performance.now() - tChecks).toFixed(0)} ms`);
    for (const url of refused) fail('network', `the page asked for ${url}`);
    for (const e of consoleErrors) fail('console', e);
    for (const e of pageErrors) fail('page error', e);
  } catch (e) {
    if (!failures.length) fail('driver', e.stack ?? String(e));
  } finally {
    await browser.close();
  }
  for (const f of failures) console.error(`FAIL: ${f}`);
  if (failures.length) process.exit(1);
  note('ok');
}

await main();
