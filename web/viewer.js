// The viewer of ptreg's HTML reports (docs/REPORT.md): reads the page's JSON
// description and base64 blocks, draws every layer with three.js, and lays out
// the panel beside it: a toggle per layer, the point size, colour bars, the
// colour key, the curves and the run's numbers. Bundled into libptreg by the
// build (esbuild), so a page needs no network. window.ptregReport is for
// scripts and the browser tests.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';

// The colour map of values: low (dark blue) to high (red).
const MAP_STOPS = [[0x2c, 0x3e, 0x9e], [0x21, 0xa6, 0xc9], [0x5e, 0xc9, 0x62], [0xf2, 0xd4, 0x3b], [0xd7, 0x30, 0x1f]];

const STYLE = `
body { margin: 0; font: 13px/1.4 system-ui, sans-serif; color: #222; background: #fff; }
#ptreg { display: flex; height: 100vh; }
#ptreg-panel { width: 320px; min-width: 320px; overflow-y: auto; padding: 10px 14px; box-sizing: border-box;
  border-right: 1px solid #ddd; }
#ptreg-view { flex: 1; position: relative; background: #fff; min-width: 0; }
#ptreg-view canvas { display: block; }
h1 { font-size: 16px; margin: 4px 0 8px; overflow-wrap: anywhere; }
h2 { font-size: 13px; margin: 14px 0 4px; color: #555; text-transform: uppercase; letter-spacing: .04em; }
.layer { display: flex; align-items: center; gap: 6px; margin: 2px 0; }
.swatch { width: 12px; height: 12px; border: 1px solid #888; display: inline-block; }
.note { color: #666; font-size: 12px; }
.bar { height: 12px; border: 1px solid #888; }
.bar-labels { display: flex; justify-content: space-between; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; }
td { padding: 1px 6px 1px 0; vertical-align: top; overflow-wrap: anywhere; }
td:first-child { color: #555; }
pre { font-size: 11px; overflow-x: auto; background: #f6f6f6; padding: 6px; }
svg text { font-size: 10px; fill: #444; }
`;

function element(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

function blobBytes(id) {
  const text = document.getElementById(`ptreg-blob-${id}`).textContent;
  const bin = atob(text);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

const blobFloats = (id) => new Float32Array(blobBytes(id).buffer);

function mapColor(t) {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (MAP_STOPS.length - 1);
  const i = Math.min(MAP_STOPS.length - 2, Math.floor(x)), f = x - i;
  return MAP_STOPS[i].map((a, k) => Math.round(a + f * (MAP_STOPS[i + 1][k] - a)));
}

const gradientCss = () => `linear-gradient(to right, ${MAP_STOPS.map((c) => `rgb(${c.join(',')})`).join(', ')})`;

// sRGB bytes into the geometry's colour attribute (three.js works in linear light).
function colorAttribute(rgbBytes) {
  const c = new Float32Array(rgbBytes.length), tmp = new THREE.Color();
  for (let i = 0; i < rgbBytes.length; i += 3) {
    tmp.setRGB(rgbBytes[i] / 255, rgbBytes[i + 1] / 255, rgbBytes[i + 2] / 255, THREE.SRGBColorSpace);
    c[i] = tmp.r; c[i + 1] = tmp.g; c[i + 2] = tmp.b;
  }
  return new THREE.BufferAttribute(c, 3);
}

function valueColors(values, range) {
  const rgb = new Uint8Array(values.length * 3), span = range[1] - range[0];
  values.forEach((v, i) => rgb.set(mapColor(span > 0 ? (v - range[0]) / span : 0.5), 3 * i));
  return rgb;
}

function pointsObject(layer, material) {
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(blobFloats(layer.positions), 3));
  if (layer.colors !== undefined) g.setAttribute('color', colorAttribute(blobBytes(layer.colors)));
  else if (layer.values !== undefined) g.setAttribute('color', colorAttribute(valueColors(blobFloats(layer.values), layer.range)));
  else material.color = new THREE.Color(layer.color);
  material.vertexColors = g.hasAttribute('color');
  return new THREE.Points(g, material);
}

// Segments as they are; paths as the segments between their successive points.
function linesObject(layer) {
  let xyz = blobFloats(layer.positions);
  if (layer.kind === 'paths') {
    const L = layer.length, seg = [];
    for (let p = 0; p < layer.count; p++)
      for (let j = 0; j + 1 < L; j++) seg.push(...xyz.subarray(3 * (p * L + j), 3 * (p * L + j + 2)));
    xyz = new Float32Array(seg);
  }
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(xyz, 3));
  return new THREE.LineSegments(g, new THREE.LineBasicMaterial({ color: new THREE.Color(layer.color) }));
}

function sliceObject(layer) {
  const grey = blobBytes(layer.pixels), w = layer.width, h = layer.height;
  const rgba = new Uint8Array(4 * w * h);
  grey.forEach((v, i) => rgba.set([v, v, v, 255], 4 * i));
  const tex = new THREE.DataTexture(rgba, w, h);
  tex.colorSpace = THREE.SRGBColorSpace;
  tex.needsUpdate = true;
  const [c, a, d] = [layer.corner, layer.across, layer.down].map((v) => new THREE.Vector3(...v));
  const corners = [c, c.clone().add(a), c.clone().add(d), c.clone().add(a).add(d)];
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(new Float32Array(corners.flatMap((v) => v.toArray())), 3));
  g.setAttribute('uv', new THREE.BufferAttribute(new Float32Array([0, 0, 1, 0, 0, 1, 1, 1]), 2));
  g.setIndex([0, 1, 2, 2, 1, 3]);
  const m = new THREE.MeshBasicMaterial({ map: tex, side: THREE.DoubleSide, transparent: true, opacity: 0.85 });
  return new THREE.Mesh(g, m);
}


function formatNumber(v) {
  if (typeof v !== 'number') return String(v);
  return Number.isInteger(v) ? String(v) : v.toPrecision(6).replace(/\.?0+(e|$)/, '$1');
}

// The curve of one measure per step: a polyline, log axis when positive over more than a hundredfold.
function curveSvg(curve) {
  const W = 290, H = 150, L = 44, B = 22, T = 18;
  const pts = curve.values.map((v, i) => [i, v]).filter(([, v]) => v !== null && Number.isFinite(v));
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H);
  if (!pts.length) return svg;
  let lo = Math.min(...pts.map((p) => p[1])), hi = Math.max(...pts.map((p) => p[1]));
  const log = lo > 0 && hi > 100 * lo;
  const f = log ? Math.log10 : (x) => x;
  const n = Math.max(1, curve.values.length - 1);
  const y = (v) => (f(hi) > f(lo) ? T + (H - B - T) * (1 - (f(v) - f(lo)) / (f(hi) - f(lo))) : (H - B + T) / 2);
  const x = (i) => L + (W - L - 6) * i / n;
  svg.innerHTML = `<text x="${L}" y="12">${curve.measure}${log ? ' (log)' : ''}</text>`
    + `<line x1="${L}" y1="${H - B}" x2="${W - 4}" y2="${H - B}" stroke="#888"/>`
    + `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#888"/>`
    + `<text x="2" y="${T + 8}">${formatNumber(hi)}</text><text x="2" y="${H - B}">${formatNumber(lo)}</text>`
    + `<text x="${L}" y="${H - 6}">0</text><text x="${W - 24}" y="${H - 6}">${n}</text>`
    + `<polyline fill="none" stroke="#4a74b8" stroke-width="1.5" points="${pts.map(([i, v]) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`;
  return svg;
}

// ptreg_ipf_color of a direction, for the key: cubic standard triangle z >= x >= y >= 0.
function ipfColor(v) {
  const [y, x, z] = v.map(Math.abs).sort((a, b) => a - b);
  const c = [z - x, x - y, y], top = Math.max(...c);
  return c.map((k) => Math.round(255 * (top > 0 ? k / top : 1)));
}

// The key: the standard triangle in stereographic projection (ipf), or the sphere's octant (axis).
function keyCanvas(kind) {
  const S = 150, cv = element('canvas', { width: S, height: S, id: 'ptreg-key' }), ctx = cv.getContext('2d');
  const img = ctx.createImageData(S, S), R = kind === 'ipf' ? 0.42 : 1.0;
  for (let py = 0; py < S; py++)
    for (let px = 0; px < S; px++) {
      const X = R * px / (S - 1), Y = R * (S - 1 - py) / (S - 1), q = 1 + X * X + Y * Y;
      const d = [2 * X / q, 2 * Y / q, (1 - X * X - Y * Y) / q];
      const inside = kind === 'ipf' ? d[2] >= d[0] && d[0] >= d[1] && d[1] >= 0 : X * X + Y * Y <= 1;
      if (!inside) continue;
      const rgb = kind === 'ipf' ? ipfColor(d) : d.map((k) => Math.round(255 * Math.abs(k)));
      img.data.set([...rgb, 255], 4 * (py * S + px));
    }
  ctx.putImageData(img, 0, 0);
  return cv;
}

// The result's numbers and words, one level of objects in (a.b); arrays are in the JSON below.
function resultTable(result) {
  const t = element('table', { id: 'ptreg-numbers' });
  const row = (k, v) => t.append(element('tr', {}, element('td', {}, k), element('td', {}, formatNumber(v))));
  for (const [k, v] of Object.entries(result)) {
    if (v === null || Array.isArray(v)) continue;
    if (typeof v !== 'object') row(k, v);
    else for (const [k2, v2] of Object.entries(v)) if (v2 !== null && typeof v2 !== 'object') row(`${k}.${k2}`, v2);
  }
  return t;
}

function matrixText(m) {
  return m.map((row) => row.map((v) => v.toFixed(6).padStart(11)).join(' ')).join('\n');
}

class Report {
  constructor(desc) {
    this.desc = desc;
    this.layers = [];
    this.colorbars = [];
    document.head.append(element('style', {}, STYLE));
    document.body.append(element('div', { id: 'ptreg' }, this.panel = element('div', { id: 'ptreg-panel' }),
      this.view = element('div', { id: 'ptreg-view' })));
    this.renderer = new THREE.WebGLRenderer({ antialias: false, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(window.devicePixelRatio || 1);
    this.renderer.setClearColor(0xffffff);
    this.view.append(this.renderer.domElement);
    this.scene = new THREE.Scene();
    this.camera = new THREE.PerspectiveCamera(45, 1, 1e-3, 1e3);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.addEventListener('change', () => this.render());
    this.pointMaterials = [];
    this.build();
    this.frame();
    window.addEventListener('resize', () => this.resize());
    this.resize();
  }

  build() {
    const d = this.desc, p = this.panel;
    p.append(element('h1', {}, d.title));
    const shown = d.shown;
    p.append(element('div', { class: 'note', id: 'ptreg-shown' }, shown.points < shown.of
      ? `${shown.points.toLocaleString('en')} of ${shown.of.toLocaleString('en')} points shown (evenly thinned to the cap of ${shown.cap.toLocaleString('en')})`
      : `all ${shown.of.toLocaleString('en')} points shown`));
    p.append(element('h2', {}, 'Layers'));
    d.layers.forEach((layer, i) => this.addLayer(layer, i));
    this.addPointSize();
    if (this.colorbars.length) p.append(element('h2', {}, 'Colour'));
    for (const bar of this.colorbars) p.append(this.colorbarElement(bar));
    if (d.key) p.append(element('h2', {}, d.key === 'ipf' ? 'Inverse pole figure of z' : '|z| in the crystal frame'),
      keyCanvas(d.key), element('div', { class: 'note' }, d.key === 'ipf' ? '001 (red), 101 (green), 111 (blue)' : 'x red, y green, z blue'));
    for (const c of d.curves) p.append(element('h2', {}, c.title), curveSvg(c));
    for (const f of d.figures || []) {
      const figure = element('div', { class: 'figure' });
      figure.innerHTML = f.svg; // the library's own SVG (ptreg_report_add_figure)
      p.append(element('h2', {}, f.title), figure);
    }
    if (d.result) this.addNumbers(d.result);
  }

  addLayer(layer, i) {
    let obj, swatch;
    if (layer.kind === 'points') {
      const m = new THREE.PointsMaterial({ size: 2, sizeAttenuation: false });
      this.pointMaterials.push(m);
      obj = pointsObject(layer, m);
      swatch = layer.values !== undefined ? gradientCss() : layer.colors !== undefined ? '#ccc' : layer.color;
      if (layer.values !== undefined) this.colorbars.push({ layer: layer.name, name: layer.valuesName, min: layer.range[0], max: layer.range[1] });
    } else if (layer.kind === 'slice') {
      obj = sliceObject(layer);
      swatch = '#888';
    } else {
      obj = linesObject(layer);
      swatch = layer.color;
    }
    this.scene.add(obj);
    const box = element('input', { type: 'checkbox', id: `ptreg-layer-${i}` });
    box.checked = true;
    box.addEventListener('change', () => this.setVisible(i, box.checked));
    const count = layer.kind === 'slice' ? `${layer.width} x ${layer.height}`
      : layer.count < layer.total ? `${layer.count.toLocaleString('en')} of ${layer.total.toLocaleString('en')}`
        : layer.total.toLocaleString('en');
    this.panel.append(element('label', { class: 'layer' }, box,
      element('span', { class: 'swatch', style: `background: ${swatch}` }), `${layer.name} `,
      element('span', { class: 'note' }, `(${count})`)));
    const uniform = layer.kind !== 'slice' && layer.values === undefined && layer.colors === undefined;
    this.layers.push({ name: layer.name, kind: layer.kind, color: uniform ? layer.color : null, object: obj, checkbox: box,
      count: layer.count ?? null, total: layer.total ?? null });
  }

  addPointSize() {
    const s = element('input', { type: 'range', min: '1', max: '10', step: '0.5', value: '2', id: 'ptreg-point-size' });
    s.addEventListener('input', () => { this.pointMaterials.forEach((m) => { m.size = Number(s.value); }); this.render(); });
    this.panel.append(element('label', { class: 'layer' }, 'point size ', s));
  }

  colorbarElement(bar) {
    return element('div', { class: 'colorbar' }, element('div', {}, `${bar.layer}: ${bar.name}`),
      element('div', { class: 'bar', style: `background: ${gradientCss()}` }),
      element('div', { class: 'bar-labels' },
        element('span', { class: 'colorbar-min', 'data-value': String(bar.min) }, formatNumber(bar.min)),
        element('span', { class: 'colorbar-max', 'data-value': String(bar.max) }, formatNumber(bar.max))));
  }

  addNumbers(result) {
    this.panel.append(element('h2', {}, 'Result'), resultTable(result));
    if (Array.isArray(result.transformation)) this.panel.append(element('pre', {}, matrixText(result.transformation)));
    const details = element('details', {}, element('summary', {}, 'JSON'),
      element('pre', { id: 'ptreg-json' }, JSON.stringify(result, null, 1)));
    this.panel.append(details);
  }

  setVisible(i, on) {
    this.layers[i].object.visible = on;
    this.layers[i].checkbox.checked = on;
    this.render();
  }

  // The camera on the bounding sphere of everything drawn.
  frame() {
    const box = new THREE.Box3().setFromObject(this.scene);
    if (box.isEmpty()) box.set(new THREE.Vector3(-1, -1, -1), new THREE.Vector3(1, 1, 1));
    const sphere = box.getBoundingSphere(new THREE.Sphere());
    const r = Math.max(sphere.radius, 1e-9);
    this.camera.near = r / 1000; this.camera.far = r * 100;
    this.camera.position.copy(sphere.center).add(new THREE.Vector3(0.6, -1.6, 1.0).normalize().multiplyScalar(2.6 * r));
    this.camera.up.set(0, 0, 1);
    this.controls.target.copy(sphere.center);
    this.camera.updateProjectionMatrix();
    this.controls.update();
  }

  resize() {
    const w = this.view.clientWidth || 640, h = this.view.clientHeight || 480;
    this.renderer.setSize(w, h);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.render();
  }

  render() { this.renderer.render(this.scene, this.camera); }
}

function start() {
  const desc = JSON.parse(document.getElementById('ptreg-report').textContent);
  const report = new Report(desc);
  window.ptregReport = {
    description: desc,
    layers: report.layers.map(({ name, kind, color, count, total }) => ({ name, kind, color, count, total })),
    colorbars: report.colorbars,
    setVisible: (i, on) => report.setVisible(i, on),
    render: () => report.render(),
    ready: true,
  };
  document.body.dataset.ready = '1';
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
