// motionctl view: motiond's values, live. motionctl forwards motiond's own JSON lines (docs/protocol.md)
// as Server-Sent Events, a batch of lines an event, and says in `status` events whether motiond is there.
// Everything is drawn by hand on 2D canvases: no library, nothing fetched from elsewhere.
'use strict';

(function () {
  // The drawn state, for a reader outside (the browser test) and for a curious person in the console.
  const view = window.motionView = {
    connected: false,      // motionctl's event stream is open
    status: null,          // motionctl's last word on motiond: {state, socket, message}
    quaternion: null,      // the attitude drawn, [w, x, y, z]
    timestamp: null,       // the time of the attitude drawn, ns of motiond's sample clock (interpolated)
    frames: 0,             // 3D frames drawn
    fps: 0,                // 3D frames drawn in the last second
    paints: 0,             // times anything was drawn (model, plots, sphere, texts)
    stale: false,          // the values shown are not live: the red banner says why
    messages: 0,           // motiond's lines received
    plotsSamples: { acceleration: 0, rotation: 0, magnetic: 0, pressure: 0, altitude: 0 },
  };

  const $ = (id) => document.getElementById(id);
  const SPAN = 10;  // seconds on the plots
  // Plots scroll 5 times a second at most while the device turns: enough to read them, and each
  // drawing of them costs the browser (without a GPU, 10 a second took 2.7 % of a core). At rest,
  // where they show only noise, every 2 s.
  const PLOT_INTERVAL = 200, PLOT_INTERVAL_AT_REST = 2000;

  // ---- The connection -------------------------------------------------------------------------

  const banner = $('banner');
  // Anything but `ok` says that the values shown are not live: they are dimmed, not left looking fresh.
  function say(text, kind) {
    banner.textContent = text;
    banner.className = 'banner ' + kind;
    view.stale = kind !== 'ok';
    document.querySelector('main').classList.toggle('stale', view.stale);
  }

  // motionctl sends a batch at least every second while motiond is there (it answers STATUS every second):
  // a longer silence is a stopped motionctl (or motiond) whose connection stays open. Longer than
  // motionctl's own 3 s for a silent motiond, so that its more precise word comes first. Only while
  // motiond is connected: absent or refusing, motionctl says so once and is silent after, and what it
  // said holds.
  const SILENCE = 5000;
  let lastEvent = performance.now();
  let silent = false;
  setInterval(() => {
    const quiet = performance.now() - lastEvent;
    if (quiet < SILENCE || silent || !view.connected || (view.status && view.status.state !== 'connected')) return;
    silent = true;
    say('no data for ' + Math.round(quiet / 1000) + ' s: motiond or motionctl view is not running (stopped?); the values shown are old', 'bad');
  }, 1000);
  function heard() {
    lastEvent = performance.now();
    if (!silent) return;
    silent = false;
    if (view.status) showStatus(view.status);
  }

  function showStatus(status) {
    if (status.state === 'connected') say('live: ' + status.message, 'ok');
    else say(status.message, 'bad');
  }

  const source = new EventSource('events');
  source.onopen = () => { view.connected = true; heard(); };
  source.onerror = () => {
    view.connected = false;
    // Closed for good: the server refused the stream (too many pages open, or a motionctl view
    // started anew, with another URL); the browser does not try again then.
    if (source.readyState === EventSource.CLOSED) {
      say('motionctl view refused the live data: too many pages open, or it was restarted (then use its new URL). Reload to try again.', 'bad');
    } else {
      say('motionctl view is not answering (stopped?); trying again…', 'bad');
    }
  };
  source.addEventListener('status', (event) => {
    const status = JSON.parse(event.data);
    if (status.state === 'connected' && (view.status || {}).state !== 'silent') note = '';  // a new daemon: what the old one said no longer holds
    view.status = status;
    lastEvent = performance.now();
    silent = false;
    showStatus(status);
  });
  source.onmessage = (event) => {
    heard();
    accelSum = null;
    for (const message of JSON.parse(event.data)) take(message);
    // A batch at rest holds a second of noisy samples: their mean is steady, one sample of them is not.
    if (accelSum) lastAccel = { x: accelSum.x / accelSum.n, y: accelSum.y / accelSum.n, z: accelSum.z / accelSum.n };
    playout.anchor();
    const now = performance.now();
    // While the model turns, display frames draw; at rest, what changed is drawn here, without asking
    // for a display frame (each costs the browser, even one that draws nothing).
    if (now < animateUntil) redraw();
    else paint(now);
  };

  // ---- What motiond says ----------------------------------------------------------------------

  const seconds = (ns) => ns / 1e9;  // sample clock; doubles are exact to the microsecond for 104 days
  let lastAccel = null;             // the raw acceleration drawn: the mean of the last batch's, g
  let accelSum = null;              // the sum of this batch's raw accelerations, and their count
  let lastMotion = null;
  let note = '';                    // what went wrong, under the model
  let lastGravity = null;
  let sensors = [];                 // STATUS's
  let unavailable = {};             // STATUS's: why a stream cannot be had, by stream
  let magnetOffset = null;          // STATUS's hard-iron offset, µT
  let accuracy = '–';
  const dropped = {};

  function take(m) {
    view.messages++;
    switch (m.class) {
      case 'MOTION': takeMotion(m); break;
      case 'ACCELEROMETER':
        if (!accelSum) accelSum = { x: 0, y: 0, z: 0, n: 0 };
        accelSum.x += m.acceleration.x; accelSum.y += m.acceleration.y; accelSum.z += m.acceleration.z; accelSum.n++;
        plots.acceleration.push(seconds(m.timestamp), [m.acceleration.x, m.acceleration.y, m.acceleration.z]);
        break;
      case 'MAGNETOMETER':
        plots.magnetic.push(seconds(m.timestamp), [m.magnetic_field.x, m.magnetic_field.y, m.magnetic_field.z]);
        sphere.push(m.magnetic_field);
        break;
      case 'ALTITUDE':
        plots.pressure.push(seconds(m.timestamp), [m.pressure]);
        plots.altitude.push(seconds(m.timestamp), [m.altitude]);
        break;
      case 'ORIENTATION': show('orientation', m.orientation); break;
      case 'TILT': show('tilt', m.tilt); break;
      case 'PROXIMITY': show('proximity', (m.near ? 'near' : 'far') + ' (' + fixed(m.value, 0) + ')'); break;
      case 'LIGHT': show('light', fixed(m.illuminance, 1) + ' ' + m.unit); break;
      case 'PEDOMETER': show('steps', m.steps + ' (' + fixed(m.distance, 1) + ' m)'); break;
      case 'ACTIVITY': show('activity', m.activity + ' (' + m.confidence + ')'); break;
      case 'GESTURE': show('gesture', m.gesture + ' at ' + new Date().toLocaleTimeString()); break;
      case 'HINGE': show('hinge', fixed(m.angle, 0) + '° ' + m.mode); break;
      case 'PRESENCE': show('presence', presenceText(m)); break;
      // One-shot (protocol 1.11): motionctl view arms it again after each, so each shows.
      case 'SIGNIFICANT_MOTION': show('significant-motion', m.source + ' at ' + new Date().toLocaleTimeString()); break;
      case 'STATUS': takeStatus(m); break;
      case 'DROPPED': dropped[m.stream] = (dropped[m.stream] || 0) + m.count; break;
      case 'ENDED': note = m.stream + ' ended: ' + m.reason; break;
      case 'ERROR': note = 'motiond: ' + m.message; break;
    }
  }

  // PRESENCE as text: attention and distance only where the sensor gives them (protocol 1.11).
  function presenceText(m) {
    let text = m.present ? 'present' : 'absent';
    if (m.attention !== undefined && m.attention !== null) text += m.attention ? ', attentive' : ', inattentive';
    if (m.distance !== undefined && m.distance !== null) text += ', ' + fixed(m.distance, 2) + ' m';
    return text + ' (' + m.source + ')';
  }

  // A number as text; motiond sends a number it could not compute as null.
  function fixed(value, digits) { return value == null ? '–' : value.toFixed(digits); }

  // A number that follows samples, as text: the one shown stays until the value is 0.9 of its last
  // digit away, so that noise about a rounding boundary does not flip the digit (and redraw the text)
  // at every sample. `key` names the place it is shown.
  const held = {};
  function steady(key, value, digits) {
    if (value == null) return '–';
    const shown = held[key];
    if (shown == null || Math.abs(value - shown) >= 0.9 * Math.pow(10, -digits)) held[key] = value;
    return held[key].toFixed(digits);
  }

  // Sets a text only when it changes: each change costs the browser a layout and a paint.
  function setText(id, text) {
    const element = $(id);
    if (element.textContent === text) return false;
    element.textContent = text;
    return true;
  }

  // An event's new value, highlighted for a second: a class set and a timer, not a CSS animation,
  // which would restyle and repaint the page at the display's rate for its whole second.
  function show(id, text) {
    if (!setText(id, text)) return;
    const element = $(id);
    element.classList.add('changed');
    clearTimeout(element.flash);
    element.flash = setTimeout(() => element.classList.remove('changed'), 1000);
  }

  function takeMotion(m) {
    const t = seconds(m.timestamp);
    const q = m.attitude.quaternion;
    playout.push(t, [q.w, q.x, q.y, q.z], m.timestamp);
    model.moved([q.w, q.x, q.y, q.z]);
    lastGravity = m.gravity;
    lastMotion = m;
    accuracy = m.magnetic_field.accuracy;
    if (!(m.unavailable || {}).rotation_rate) plots.rotation.push(t, [m.rotation_rate.x, m.rotation_rate.y, m.rotation_rate.z]);
  }

  // The texts that follow the samples; whether one changed.
  function readouts() {
    const m = lastMotion;
    let changed = false;
    if (m) {
      const unavailable = m.unavailable || {};
      const deg = (key, r) => steady(key, r == null ? null : r * 180 / Math.PI, 1).padStart(7) + '°';
      changed = setText('frame', m.frame) | setText('angles', 'roll ' + deg('roll', m.attitude.roll) + '   pitch ' + deg('pitch', m.attitude.pitch) +
        '   yaw ' + (unavailable.yaw ? '      –' : deg('yaw', m.attitude.yaw)) + (m.heading != null ? '   heading ' + steady('heading', m.heading, 1) + '°' : ''));
      if (!note) changed = setText('model-note', Object.values(unavailable).join('; ')) || changed;
    }
    if (note) changed = setText('model-note', note) || changed;
    for (const name in plots) changed = plots[name].label() || changed;
    return changed;
  }

  function takeStatus(m) {
    sensors = m.sensors || [];
    unavailable = (m.unavailable || {}).streams || {};
    const calibration = m.calibration || {};
    magnetOffset = calibration.magnetometer_offset || null;
    if (calibration.magnetic_field_accuracy) accuracy = calibration.magnetic_field_accuracy;
    setText('sensors', sensors.map((s) =>
      s.device + '  ' + s.kinds.join('+') + '  ' + s.mode + '  ' + steady('sensor ' + s.device, s.measured_rate, 1) + ' Hz').join('\n') +
      '\ndropped by motiond: ' + (m.dropped || 0) + (Object.keys(dropped).length ? ', here: ' + JSON.stringify(dropped) : ''));
  }

  // The rate a sensor of `kind` really delivers, by STATUS.
  function sensorRate(kind) {
    const sensor = sensors.find((s) => s.kinds.includes(kind));
    return sensor && sensor.measured_rate != null ? steady('sensor ' + sensor.device, sensor.measured_rate, 1) + ' Hz' : '–';
  }

  // ---- Plots ----------------------------------------------------------------------------------

  // A scrolling plot of the last SPAN seconds of a few series, its right edge the newest sample.
  class Plot {
    constructor(name, colors, kind, stream) {
      this.name = name;
      this.canvas = $('plot-' + name);
      this.context = sharp(this.canvas);
      this.colors = colors;
      this.kind = kind;        // the sensor kind whose real rate STATUS gives
      this.stream = stream;    // the stream whose drops are counted
      this.times = [];
      this.values = [];
      this.dirty = true;
      this.low = Infinity;
      this.high = -Infinity;
    }

    push(t, values) {
      if (values.some((v) => v == null)) return;  // not computed: a gap, not a zero
      // A restarted daemon (or a replay starting over) has a new clock: start afresh.
      if (this.times.length && t < this.times[this.times.length - 1]) { this.times = []; this.values = []; }
      this.times.push(t);
      this.values.push(values);
      let drop = 0;
      while (drop < this.times.length && this.times[drop] < t - SPAN) drop++;
      if (drop > 64) { this.times.splice(0, drop); this.values.splice(0, drop); }
      view.plotsSamples[this.name]++;
      this.dirty = true;
    }

    // Samples a second over the plot's span, as received: over a second alone, the count would
    // jump by one sample (2 % at 50 Hz) as the window slides.
    shownRate() {
      const n = this.times.length;
      let i = 0;
      while (i < n - 1 && this.times[i] < this.times[n - 1] - SPAN) i++;
      return n - 1 > i ? (n - 1 - i) / (this.times[n - 1] - this.times[i]) : 0;
    }

    label() {
      // Why the machine cannot give it: STATUS names the stream, or (rotation, a part of motion) the sensor.
      const missing = unavailable[this.stream] || unavailable[this.kind];
      this.canvas.classList.toggle('absent', !!missing && !this.times.length);
      return setText('rate-' + this.name, this.times.length
        ? 'sensor ' + sensorRate(this.kind) + ' · shown ' + steady('shown ' + this.name, this.shownRate(), 1) + ' Hz · dropped ' + (dropped[this.stream] || 0)
        : missing || 'no samples yet');
    }

    // Draws what came since the last drawing; whether it drew.
    draw() {
      if (!this.dirty) return false;
      this.dirty = false;
      const { canvas, context: g } = this;
      const w = canvas.logicalWidth, h = canvas.logicalHeight;
      g.fillStyle = '#111419';
      g.fillRect(0, 0, w, h);
      const n = this.times.length;
      if (!n) return true;
      const end = this.times[n - 1], start = end - SPAN;
      let low = Infinity, high = -Infinity;
      for (let i = 0; i < n; i++) {
        if (this.times[i] < start) continue;
        for (const v of this.values[i]) { if (v < low) low = v; if (v > high) high = v; }
      }
      // The scale grows at once and shrinks slowly, so that it does not jump with each sample.
      this.low = isFinite(this.low) ? Math.min(low, this.low + (low - this.low) * 0.02) : low;
      this.high = isFinite(this.high) ? Math.max(high, this.high + (high - this.high) * 0.02) : high;
      let lo = this.low, hi = this.high;
      const pad = Math.max((hi - lo) * 0.1, 1e-3);
      lo -= pad; hi += pad;
      const x = (t) => (t - start) / SPAN * (w - 50);
      const y = (v) => h - 4 - (v - lo) / (hi - lo) * (h - 8);
      g.strokeStyle = '#2a3038';
      g.lineWidth = 1;
      g.beginPath();
      for (let s = Math.ceil(start); s <= end; s++) { g.moveTo(x(s), 0); g.lineTo(x(s), h); }
      if (lo < 0 && hi > 0) { g.moveTo(0, y(0)); g.lineTo(w - 50, y(0)); }
      g.stroke();
      g.fillStyle = '#8a919c';
      g.font = '11px ui-monospace, monospace';
      g.fillText(format(hi), w - 46, 12);
      g.fillText(format(lo), w - 46, h - 4);
      g.lineWidth = 1;
      for (let series = 0; series < this.colors.length; series++) {
        g.strokeStyle = this.colors[series];
        g.beginPath();
        let first = true;
        for (let i = 0; i < n; i++) {
          if (this.times[i] < start) continue;
          const px = x(this.times[i]), py = y(this.values[i][series]);
          if (first) { g.moveTo(px, py); first = false; } else g.lineTo(px, py);
        }
        g.stroke();
      }
      return true;
    }
  }

  // The canvas's 2D context, with as many pixels as the screen has (a laptop's 2× display), drawn on
  // in the page's own units: the canvas's `logicalWidth` and `logicalHeight`.
  function sharp(canvas) {
    const ratio = Math.min(2, window.devicePixelRatio || 1);
    canvas.logicalWidth = canvas.width;
    canvas.logicalHeight = canvas.height;
    canvas.style.width = canvas.width + 'px';
    canvas.style.height = canvas.height + 'px';
    canvas.width = Math.round(canvas.logicalWidth * ratio);
    canvas.height = Math.round(canvas.logicalHeight * ratio);
    // Opaque: the browser composites it without blending it over what is behind.
    const context = canvas.getContext('2d', { alpha: false });
    context.scale(ratio, ratio);
    return context;
  }

  function format(v) {
    const a = Math.abs(v);
    return a >= 1000 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(3);
  }

  const XYZ = ['#ff5c5c', '#5cd65c', '#5c9dff'];
  const plots = {
    acceleration: new Plot('acceleration', XYZ, 'accelerometer', 'accelerometer'),
    rotation: new Plot('rotation', XYZ, 'gyroscope', 'motion'),
    magnetic: new Plot('magnetic', XYZ, 'magnetometer', 'magnetometer'),
    pressure: new Plot('pressure', ['#d0a0ff'], 'pressure', 'altitude'),
    altitude: new Plot('altitude', ['#ffd070'], 'pressure', 'altitude'),
  };

  // ---- The compass's calibration: the field's directions on a sphere ---------------------------

  // Directions of the field (less the hard-iron offset) on a sphere seen from a little above; the
  // coverage is the share of 72 equal areas (6 bands of equal height, 12 sectors each) that a sample
  // fell in. Redrawn only when its dots (whole pixels) or its texts change.
  const sphere = {
    canvas: $('sphere'),
    raw: [],
    bins: new Set(),
    min: [Infinity, Infinity, Infinity],
    max: [-Infinity, -Infinity, -Infinity],
    lastDraw: 0,
    dirty: true,
    shown: new Set(),       // the dots last drawn

    push(field) {
      this.dirty = true;
      const v = [field.x, field.y, field.z];
      if (v.some((k) => k == null)) return;
      for (let i = 0; i < 3; i++) { this.min[i] = Math.min(this.min[i], v[i]); this.max[i] = Math.max(this.max[i], v[i]); }
      this.raw.push(v);
      if (this.raw.length > 1500) this.raw.shift();
    },

    // The hard-iron offset: motiond's once it has one, else the middle of the ranges seen.
    center() {
      if (magnetOffset && (magnetOffset.x || magnetOffset.y || magnetOffset.z)) return [magnetOffset.x, magnetOffset.y, magnetOffset.z];
      return this.min.map((low, i) => (low + this.max[i]) / 2);
    },

    // Whether it drew.
    draw(now) {
      // Twice a second at most while the device turns, every 5 s at rest: it changes slowly, and at
      // rest the noise alone moves its dots (it cost 0.3 % of a core drawn twice a second there).
      if (!this.dirty || now - this.lastDraw < (now < animateUntil ? 500 : 5000)) return false;
      this.dirty = false;
      this.lastDraw = now;
      const c = this.center();
      const g = this.context || (this.context = sharp(this.canvas));
      const w = this.canvas.logicalWidth, r = w / 2 - 10;
      const cos = Math.cos(0.6), sin = Math.sin(0.6);
      this.bins.clear();
      let radius = 0;
      const dots = [];
      for (const v of this.raw) {
        const d = [v[0] - c[0], v[1] - c[1], v[2] - c[2]];
        const length = Math.hypot(d[0], d[1], d[2]);
        if (!length) continue;
        radius += length;
        const u = d.map((k) => k / length);
        const band = Math.min(5, Math.floor((u[2] + 1) / 2 * 6));
        const sector = Math.min(11, Math.floor((Math.atan2(u[1], u[0]) + Math.PI) / (2 * Math.PI) * 12));
        this.bins.add(band * 12 + sector);
        // Turned about z, then seen from a little above.
        const px = u[0] * cos - u[1] * sin, py = u[0] * sin + u[1] * cos;
        const sy = -(u[2] * 0.95 - py * 0.3), depth = py * 0.95 + u[2] * 0.3;
        // A dot as one number: its pixel (within 512) and whether it is on the near side.
        dots.push((Math.round(w / 2 + px * r) * 512 + Math.round(w / 2 + sy * r)) * 2 + (depth < 0 ? 1 : 0));
      }
      const n = this.raw.length;
      const coverage = Math.round(this.bins.size / 72 * 100);
      const text = setText('calibration', 'coverage ' + coverage + ' %   accuracy ' + accuracy +
        '\nfield ' + steady('field', n ? radius / n : null, 1) + ' µT   offset ' + c.map((k, i) => isFinite(k) ? steady('offset' + i, k, 1) : '–').join(' ') + ' µT' +
        (magnetOffset && (magnetOffset.x || magnetOffset.y || magnetOffset.z) ? '' : ' (estimated here)'));
      const picture = new Set(dots);
      if (picture.size === this.shown.size && dots.every((dot) => this.shown.has(dot))) return text;
      this.shown = picture;
      g.fillStyle = '#1d2128';
      g.fillRect(0, 0, w, w);
      g.strokeStyle = '#39414c';
      g.beginPath(); g.arc(w / 2, w / 2, r, 0, 2 * Math.PI); g.stroke();
      g.beginPath(); g.ellipse(w / 2, w / 2 + r * 0.1, r, r * 0.3, 0, 0, 2 * Math.PI); g.stroke();
      for (const dot of picture) {
        g.fillStyle = dot & 1 ? '#ffa040' : '#6b4a2a';
        g.fillRect((dot >> 10) - 1.5, (dot >> 1 & 511) - 1.5, 3, 3);
      }
      return true;
    },
  };

  // ---- The device in 3D ---------------------------------------------------------------------------

  // Plays the motion samples back at their own pace, a little behind, interpolating: batches come
  // 15 times a second while the device turns, the display draws 30 frames. (At rest one comes a
  // second, and there is nothing to play.)
  const playout = {
    samples: [],            // [t, quaternion, ns]
    offset: null,           // wall time − sample time, s
    delay: 0.1,             // s behind the newest sample, more than a batch's span (1/15 s while it turns)

    push(t, q, ns) {
      const last = this.samples[this.samples.length - 1];
      if (last && t < last[0]) this.samples = [];  // a new clock
      this.samples.push([t, q, ns]);
      if (this.samples.length > 120) this.samples.shift();
    },

    // Ties the sample clock to the wall's by a batch's newest sample, which motionctl sends at its
    // next wake-up (the older ones of a batch at rest waited up to a second): on the first, and
    // again whenever the two clocks drift apart.
    anchor() {
      const last = this.samples[this.samples.length - 1];
      if (!last || last === this.anchored) return;
      this.anchored = last;
      const offset = performance.now() / 1000 - last[0];
      if (this.offset === null || Math.abs(offset - this.offset) > 0.25) this.offset = offset;
      else this.offset = Math.min(this.offset, offset) * 0.1 + this.offset * 0.9;
    },


    // The attitude at the wall time `wall` (s), and its sample time in ns.
    at(wall) {
      const s = this.samples;
      if (!s.length) return null;
      const t = wall - this.offset - this.delay;
      const first = s[0], last = s[s.length - 1];
      if (t <= first[0]) return { q: first[1], ns: first[2] };
      if (t >= last[0]) return { q: last[1], ns: last[2] };
      let i = s.length - 1;
      while (s[i - 1][0] > t) i--;  // s[i − 1] ≤ t < s[i]
      const a = s[i - 1], b = s[i];
      const f = (t - a[0]) / (b[0] - a[0]);
      return { q: slerp(a[1], b[1], f), ns: a[2] + (b[2] - a[2]) * f };
    },
  };

  function slerp(a, b, f) {
    let dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    const sign = dot < 0 ? -1 : 1;
    dot *= sign;
    let ka = 1 - f, kb = f * sign;
    if (dot < 0.9995) {
      const angle = Math.acos(dot), s = Math.sin(angle);
      ka = Math.sin((1 - f) * angle) / s;
      kb = Math.sin(f * angle) / s * sign;
    }
    const q = [0, 1, 2, 3].map((i) => a[i] * ka + b[i] * kb);
    const n = Math.hypot(q[0], q[1], q[2], q[3]);
    return q.map((k) => k / n);
  }

  // The device drawn by hand on a 2D canvas: a slab seen in perspective from a fixed eye, its faces
  // shaded, painted far to near. (three.js in WebGL drew the same; without a GPU it cost this
  // machine's browser 40 % of a core at 60 frames a second, this a small part of that.)
  const frameTimes = [];  // when the frames of the last second were drawn, ms
  const model = makeModel($('model'));

  function makeModel(canvas) {
    const g = sharp(canvas);
    const W = canvas.logicalWidth, H = canvas.logicalHeight;
    g.fillStyle = '#1d2128';
    g.fillRect(0, 0, W, H);
    // The eye, in the reference frame (z up): south-east of the device, a little above it.
    const eye = [3.2, -3.4, 2.0];
    const forward = normalize(scale(eye, -1));
    const right = normalize(cross(forward, [0, 0, 1]));
    const up = cross(right, forward);
    const focal = 1.9 * H;
    const light = normalize([0.4, -0.6, 1]);
    function project(p) {
      const d = [p[0] - eye[0], p[1] - eye[1], p[2] - eye[2]];
      const depth = dot(d, forward);
      return [W / 2 + focal * dot(d, right) / depth, H * 0.52 - focal * dot(d, up) / depth, depth];
    }

    // The slab, in the device frame: x right, y up the screen, z out of it.
    const X = 0.375, Y = 0.75, Z = 0.04;
    const faces = [  // corners counter-clockwise seen from outside, the outward normal, the colour
      { n: [0, 0, 1], c: [[-X, -Y, Z], [X, -Y, Z], [X, Y, Z], [-X, Y, Z]], rgb: [24, 44, 72], screen: true },
      { n: [0, 0, -1], c: [[-X, Y, -Z], [X, Y, -Z], [X, -Y, -Z], [-X, -Y, -Z]], rgb: [90, 95, 104] },
      { n: [1, 0, 0], c: [[X, -Y, -Z], [X, Y, -Z], [X, Y, Z], [X, -Y, Z]], rgb: [120, 126, 136] },
      { n: [-1, 0, 0], c: [[-X, -Y, Z], [-X, Y, Z], [-X, Y, -Z], [-X, -Y, -Z]], rgb: [120, 126, 136] },
      { n: [0, 1, 0], c: [[-X, Y, Z], [X, Y, Z], [X, Y, -Z], [-X, Y, -Z]], rgb: [120, 126, 136] },
      { n: [0, -1, 0], c: [[-X, -Y, -Z], [X, -Y, -Z], [X, -Y, Z], [-X, -Y, Z]], rgb: [120, 126, 136] },
    ];
    // On the screen: the display, and a mark at its top, so that its face and its up show.
    const display = [[-X + 0.04, -Y + 0.08, Z], [X - 0.04, -Y + 0.08, Z], [X - 0.04, Y - 0.1, Z], [-X + 0.04, Y - 0.1, Z]];
    const mark = [[-0.1, Y - 0.05, Z], [0.1, Y - 0.05, Z], [0, Y - 0.02, Z]];
    const axes = [
      { from: [X, 0, 0], to: [0.95, 0, 0], color: '#ff5c5c', label: 'x' },
      { from: [0, Y, 0], to: [0, 1.3, 0], color: '#5cd65c', label: 'y' },
      { from: [0, 0, Z], to: [0, 0, 0.65], color: '#5c9dff', label: 'z' },
    ];
    const beside = [-0.85, 0.2, 0];  // where gravity's arrows start, in the device frame

    function arrow(items, from, to, color, label, width) {
      const a = project(from), b = project(to);
      items.push({ depth: (a[2] + b[2]) / 2, draw() {
        g.strokeStyle = g.fillStyle = color;
        g.lineWidth = width;
        g.beginPath(); g.moveTo(a[0], a[1]); g.lineTo(b[0], b[1]); g.stroke();
        const angle = Math.atan2(b[1] - a[1], b[0] - a[0]);
        g.beginPath();
        g.moveTo(b[0] + 4 * Math.cos(angle), b[1] + 4 * Math.sin(angle));
        g.lineTo(b[0] - 10 * Math.cos(angle - 0.4), b[1] - 10 * Math.sin(angle - 0.4));
        g.lineTo(b[0] - 10 * Math.cos(angle + 0.4), b[1] - 10 * Math.sin(angle + 0.4));
        g.fill();
        if (label) {
          g.font = 'bold 18px sans-serif';
          g.fillText(label, b[0] + 14 * Math.cos(angle) - 5, b[1] + 14 * Math.sin(angle) + 6);
        }
      } });
    }

    function polygon(points, fill, stroke) {
      g.fillStyle = fill;
      g.beginPath();
      points.forEach((p, i) => (i ? g.lineTo(p[0], p[1]) : g.moveTo(p[0], p[1])));
      g.closePath();
      g.fill();
      if (stroke) { g.strokeStyle = stroke; g.lineWidth = 1; g.stroke(); }
    }

    const origin = (world) => world(beside);
    const tip = (world, v) => {
      const length = Math.hypot(v.x, v.y, v.z) || 1;
      const k = 0.8 * Math.min(2, length) / length;
      return add(origin(world), world([v.x * k, v.y * k, v.z * k]));
    };
    // Where the picture's salient points fall on the canvas, px: the slab's corners, the axes' tips,
    // the two arrows' tips. Two pictures whose points are all within half a pixel look the same.
    const corners = [-X, X].flatMap((x) => [-Y, Y].flatMap((y) => [-Z, Z].map((z) => [x, y, z])));
    function salient(world) {
      const points = corners.concat(axes.map((axis) => axis.to)).map((p) => project(world(p)));
      if (lastGravity) points.push(project(tip(world, lastGravity)));
      if (lastAccel) points.push(project(tip(world, lastAccel)));
      return points.flatMap((p) => [p[0], p[1]]);
    }

    let shown = null;     // the salient points last drawn
    // Whether a picture differs from the one drawn: one of its salient points is half a pixel or more away.
    function differs(points) {
      return !shown || points.length !== shown.length || points.some((p, i) => Math.abs(p - shown[i]) >= 0.5);
    }
    return {
      // A sample's attitude came: if its picture differs from the one drawn, frames follow until it has played.
      moved(q) {
        if (differs(salient((v) => rotate(q, v)))) animateUntil = performance.now() + (playout.delay + 0.1) * 1000;
      },

      // Draws the attitude at `now` (ms) if the picture changes by half a pixel or more (a device at
      // rest costs no drawing); whether it drew.
      draw(now) {
        const attitude = playout.at(now / 1000);
        if (!attitude) return false;
        // What is drawn stands for the newest time, within half a pixel.
        view.timestamp = attitude.ns;
        const q = attitude.q;
        const world = (v) => rotate(q, v);
        const points = salient(world);
        if (!differs(points)) return false;
        shown = points;

        g.fillStyle = '#1d2128';
        g.fillRect(0, 0, W, H);
        // The floor: the reference frame's xy plane, below the device, its x axis marked.
        g.strokeStyle = '#2e343d';
        g.lineWidth = 1;
        g.beginPath();
        for (let k = -1.5; k <= 1.5; k += 0.5) {
          let a = project([k, -1.5, -1.1]), b = project([k, 1.5, -1.1]);
          g.moveTo(a[0], a[1]); g.lineTo(b[0], b[1]);
          a = project([-1.5, k, -1.1]); b = project([1.5, k, -1.1]);
          g.moveTo(a[0], a[1]); g.lineTo(b[0], b[1]);
        }
        g.stroke();

        const items = [];
        for (const face of faces) {
          const normal = world(face.n);
          const corners = face.c.map(world);
          const center = scale(corners.reduce(add), 0.25);
          if (dot(normal, [center[0] - eye[0], center[1] - eye[1], center[2] - eye[2]]) >= 0) continue;  // faces away
          const shade = 0.55 + 0.45 * Math.max(0, dot(normal, light));
          const fill = 'rgb(' + face.rgb.map((k) => Math.round(k * shade)).join(',') + ')';
          items.push({ depth: project(center)[2] + 0.05, draw() {
            polygon(corners.map(project), fill, '#c8ccd2');
            if (face.screen) {
              polygon(display.map(world).map(project), 'rgb(' + [31, 79, 143].map((k) => Math.round(k * shade)).join(',') + ')');
              polygon(mark.map(world).map(project), '#cfe3ff');
            }
          } });
        }
        for (const axis of axes) arrow(items, world(axis.from), world(axis.to), axis.color, axis.label, 2);
        if (lastGravity) arrow(items, origin(world), tip(world, lastGravity), '#d0d0d0', '', 2);
        if (lastAccel) arrow(items, add(origin(world), world([0, 0.06, 0])), add(world([0, 0.06, 0]), tip(world, lastAccel)), '#ffa040', '', 2);
        items.sort((a, b) => b.depth - a.depth);
        for (const item of items) item.draw();

        view.quaternion = q.slice();
        view.frames++;
        frameTimes.push(now);
        while (frameTimes[0] < now - 1000) frameTimes.shift();
        view.fps = frameTimes.length;
        return true;
      },
    };
  }

  // `v` turned by the unit quaternion `q` = [w, x, y, z]: device coordinates into the reference frame's.
  function rotate(q, v) {
    const [w, x, y, z] = q;
    const t = [2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])];
    return [v[0] + w * t[0] + y * t[2] - z * t[1], v[1] + w * t[1] + z * t[0] - x * t[2], v[2] + w * t[2] + x * t[1] - y * t[0]];
  }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function add(a, b) { return [a[0] + b[0], a[1] + b[1], a[2] + b[2]]; }
  function scale(a, k) { return [a[0] * k, a[1] * k, a[2] * k]; }
  function normalize(a) { return scale(a, 1 / Math.hypot(a[0], a[1], a[2])); }

  // ---- Drawing: in display frames, only while something changes ----------------------------------

  // Display frames are asked for only while the model turns (until the samples that moved it have
  // played). At rest a batch draws what it changed, if anything, as it comes.
  let animateUntil = 0;   // ms: the model turns until then at least
  // Frames while it turns: 30 a second, every other frame of a 60 Hz display. Each costs the browser
  // (without a GPU, a 460x380 canvas at 60 frames a second took 20 % of a core, at 30 about half).
  const FRAME_INTERVAL = 1000 / 30;
  let asked = false;
  let lastReadouts = 0;
  let lastPlots = 0;
  let lastFrame = -Infinity;
  // Asks for a display frame, not before FRAME_INTERVAL after the last: the request goes a little
  // early, and the frame comes at the display's next one.
  function redraw() {
    if (asked) return;
    asked = true;
    const wait = lastFrame + FRAME_INTERVAL - 8 - performance.now();
    if (wait > 0) setTimeout(() => requestAnimationFrame(frame), wait);
    else requestAnimationFrame(frame);
  }

  // Times are performance.now()'s throughout: headless chromium's frame timestamps lagged behind it.
  function frame() {
    asked = false;
    const now = lastFrame = performance.now();
    paint(now);
    // What waits for its turn then (a plot, the sphere) is drawn with the next batch.
    if (now < animateUntil) redraw();
  }

  // Draws what changed at `now` (ms).
  function paint(now) {
    let drew = model.draw(now);
    const due = now - lastPlots >= (now < animateUntil ? PLOT_INTERVAL : PLOT_INTERVAL_AT_REST);
    let plotted = false;
    for (const name in plots) if (due) plotted = plots[name].draw() || plotted;
    if (plotted) lastPlots = now;
    drew = sphere.draw(now) || plotted || drew;
    // The texts, 5 times a second at most: more is unreadable, and costs.
    if (now - lastReadouts >= 200) { lastReadouts = now; drew = readouts() || drew; }
    if (drew) view.paints++;
  }
  redraw();
})();
