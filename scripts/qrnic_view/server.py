# SPDX-License-Identifier: GPL-2.0-or-later
"""The web server of scripts/qrnic-view (aiohttp, Debian's python3-aiohttp:
HTTP and WebSocket without a hand-written parser).

    GET  /                     the page (static/index.html, view.js, view.css)
    GET  /api/state            the state as JSON (docs/view.md has the fields)
    GET  /ws                   WebSocket: the state, pushed every --refresh ms
    POST /api/pause            pause the simulator or the VM (QMP stop)
    POST /api/continue         continue it (QMP cont)
    POST /api/step             one device event (simulator), or QEMU's closest
    GET  /api/timeline.svg?n=N the last N complete operations as qrnic-timeline draws them
"""
import asyncio
import json
import os

from aiohttp import web, WSMsgType

from . import core

STATIC = os.path.join(core.HERE, 'static')
MAX_TIMELINE_OPS = 16


def _json(obj, status=200):
    return web.json_response(obj, status=status, dumps=lambda o: json.dumps(o, sort_keys=True))


class View:
    """One source, driven by a background task: while running, a simulator
    moves speed_ns of simulated time per wall second (in slices of tick_s);
    a QEMU source only takes in new trace records."""

    def __init__(self, source, speed_ns=200_000, tick_s=0.05, refresh_s=0.25, nframes=60):
        self.src = source
        self.speed_ns = speed_ns
        self.tick_s = tick_s
        self.refresh_s = refresh_s
        self.nframes = nframes
        self.task = None
        self.error = None

    async def call(self, fn, *args):
        # the source's calls block (ctypes, QMP); run them off the event loop
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def driver(self):
        while True:
            try:
                await self.call(self.src.advance, self.speed_ns * self.tick_s)
            except Exception as e:      # shown on the page, the server stays up
                self.error = f'{type(e).__name__}: {e}'
            await asyncio.sleep(self.tick_s)

    async def state(self):
        st = await self.call(self.src.state, self.nframes)
        st['speed_ns_per_s'] = self.speed_ns if self.src.kind == 'sim' else None
        st['error'] = self.error
        return st

    # -- handlers -----------------------------------------------------------------------
    async def index(self, request):
        return web.FileResponse(os.path.join(STATIC, 'index.html'))

    async def api_state(self, request):
        try:
            return _json(await self.state())
        except Exception as e:
            return _json({'error': f'{type(e).__name__}: {e}'}, 500)

    async def _control(self, fn):
        try:
            return _json(await self.call(fn))
        except Exception as e:
            return _json({'ok': False, 'error': f'{type(e).__name__}: {e}'}, 500)

    async def api_pause(self, request):
        return await self._control(self.src.pause)

    async def api_continue(self, request):
        return await self._control(self.src.resume)

    async def api_step(self, request):
        return await self._control(self.src.step)

    async def api_timeline(self, request):
        raw = request.query.get('n', '1')
        try:
            n = int(raw)
        except ValueError:
            return _json({'error': f'n={raw!r}: not a number'}, 400)
        if not 1 <= n <= MAX_TIMELINE_OPS:
            return _json({'error': f'n={n}: must be 1..{MAX_TIMELINE_OPS}'}, 400)
        try:
            svg = await self.call(self.src.timeline_svg, n)
        except ValueError as e:
            return _json({'error': str(e)}, 404)
        return web.Response(text=svg, content_type='image/svg+xml', headers={
            'Content-Disposition': f'inline; filename="qrnic-timeline-last{n}.svg"'})

    async def ws(self, request):
        ws = web.WebSocketResponse(heartbeat=30)
        await ws.prepare(request)

        async def reader():
            async for msg in ws:        # the page sends nothing; notice closing
                if msg.type in (WSMsgType.ERROR, WSMsgType.CLOSE):
                    break
        rd = asyncio.ensure_future(reader())
        try:
            while not ws.closed and not rd.done():
                try:
                    st = await self.state()
                except Exception as e:
                    st = {'error': f'{type(e).__name__}: {e}'}
                await ws.send_str(json.dumps(st, sort_keys=True))
                await asyncio.sleep(self.refresh_s)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            rd.cancel()
        return ws

    async def on_startup(self, app):
        self.task = asyncio.ensure_future(self.driver())

    async def on_cleanup(self, app):
        if self.task:
            self.task.cancel()
        await self.call(self.src.close)


def make_app(source, **kw):
    v = View(source, **kw)
    app = web.Application()
    app['view'] = v
    app.router.add_get('/', v.index)
    app.router.add_get('/api/state', v.api_state)
    app.router.add_post('/api/pause', v.api_pause)
    app.router.add_post('/api/continue', v.api_continue)
    app.router.add_post('/api/step', v.api_step)
    app.router.add_get('/api/timeline.svg', v.api_timeline)
    app.router.add_get('/ws', v.ws)
    app.router.add_static('/static/', STATIC)
    app.on_startup.append(v.on_startup)
    app.on_cleanup.append(v.on_cleanup)
    return app
