"""Redis on the lab clock: every expiry and time-out a lab process sends, every TTL and TIME it reads back.

A key set with `EX 7200` expires on the Redis server's wall clock, which
no lab process controls. A lab process's redis-py (Kontor's, kombu's,
the learner's, sync or `redis.asyncio`) therefore converts, on the way out:

- every expiry (SET EX/PX/EXAT/PXAT, SETEX, PSETEX, EXPIRE, PEXPIRE,
  EXPIREAT, PEXPIREAT, GETEX) to wall milliseconds, so the server drops
  the key when production time says so;
- the time-out of every blocking command (BLPOP, BRPOP, XREAD BLOCK, ...).
  Redis checks those ten times a wall second, so a blocking wait ends at
  the earliest about 0.1 wall seconds after it began;
- every Lua script (EVAL, EVALSHA, their _RO forms, SCRIPT LOAD): it is
  sent with a one-line prelude whose `redis.call`/`redis.pcall` convert
  the same commands inside the script, and TTL, PTTL, EXPIRETIME and TIME
  replies back, so redis-py's `register_script`, `Lock.extend()` and
  `Lock.reacquire()` keep production time too. A script's SHA1 as the
  client computes it still finds the script: EVALSHA and SCRIPT EXISTS
  are sent with the SHA1 of the script as it was sent (`_sha`);

and back: TTL (sent as PTTL, for a production second's precision), PTTL,
EXPIRETIME, PEXPIRETIME and TIME replies read production time.
What stays on Redis's wall clock is registered in budgetlab.inworker.seams.
"""

from __future__ import annotations

import hashlib
import math

from budgetlab.inworker import afterimport, labtime

# Commands whose arguments carry an expiry: the position of a relative one in seconds or
# milliseconds, or of an absolute Unix time, after the command name.
_RELATIVE = {b"SETEX": (1, 1.0), b"PSETEX": (1, 0.001), b"EXPIRE": (1, 1.0), b"PEXPIRE": (1, 0.001)}
_ABSOLUTE = {b"EXPIREAT": (1, 1.0), b"PEXPIREAT": (1, 0.001)}
_OPTIONS = {b"EX": 1.0, b"PX": 0.001, b"EXAT": 1.0, b"PXAT": 0.001}
_RENAMED = {b"SETEX": b"PSETEX", b"EXPIRE": b"PEXPIRE", b"EXPIREAT": b"PEXPIREAT"}
# Read back in milliseconds: a wall second is 200 production seconds at the default clock.
_IN_MILLISECONDS = {b"TTL": b"PTTL", b"EXPIRETIME": b"PEXPIRETIME"}
# Blocking commands, and where their time-out stands: the last argument, or the first after the name.
_BLOCKING_LAST = {b"BLPOP", b"BRPOP", b"BRPOPLPUSH", b"BLMOVE", b"BZPOPMIN", b"BZPOPMAX"}
_BLOCKING_FIRST = {b"BLMPOP", b"BZMPOP"}
_SCRIPTS = {b"EVAL", b"EVAL_RO"}
_SHAS = {b"EVALSHA", b"EVALSHA_RO"}

# The prelude every Lua script a lab process sends starts with, on its first line (after a
# `#!lua` line), so the script's own line numbers stay. A local `redis` shadows the global
# one for the script's chunk; Redis 7's read-only globals are never written.
_PRELUDE = " ".join("""
local redis = (function(real, factor, anchor)
 local function ms(v) return string.format('%.0f', math.max(1, math.ceil(v * factor * 1000))) end
 local function at_ms(v) return string.format('%.0f', math.ceil((anchor + (v - anchor) * factor) * 1000)) end
 local relative = {SETEX = {'PSETEX', 1}, PSETEX = {'PSETEX', 0.001}, EXPIRE = {'PEXPIRE', 1}, PEXPIRE = {'PEXPIRE', 0.001}}
 local absolute = {EXPIREAT = {'PEXPIREAT', 1}, PEXPIREAT = {'PEXPIREAT', 0.001}}
 local unit = {EX = 1, PX = 0.001, EXAT = 1, PXAT = 0.001}
 local renamed = {TTL = 'PTTL', EXPIRETIME = 'PEXPIRETIME'}
 local function out(a)
  local name = string.upper(tostring(a[1]))
  if relative[name] then a[1] = relative[name][1]; a[3] = ms(tonumber(a[3]) * relative[name][2])
  elseif absolute[name] then a[1] = absolute[name][1]; a[3] = at_ms(tonumber(a[3]) * absolute[name][2])
  elseif renamed[name] then a[1] = renamed[name]
  elseif name == 'SET' or name == 'GETEX' then
   for i = 3, #a - 1 do
    local o = string.upper(tostring(a[i]))
    if o == 'EX' or o == 'PX' then a[i] = 'PX'; a[i + 1] = ms(tonumber(a[i + 1]) * unit[o]); break
    elseif o == 'EXAT' or o == 'PXAT' then a[i] = 'PXAT'; a[i + 1] = at_ms(tonumber(a[i + 1]) * unit[o]); break end
   end
  end
  return name
 end
 local function back(name, r)
  if name == 'TIME' and type(r) == 'table' then
   local t = anchor + (tonumber(r[1]) + tonumber(r[2]) / 1e6 - anchor) / factor
   return {string.format('%.0f', math.floor(t)), string.format('%.0f', math.floor((t - math.floor(t)) * 1e6))}
  end
  if type(r) ~= 'number' or r < 0 then return r end
  if name == 'TTL' then return math.floor(r / factor / 1000 + 0.5) end
  if name == 'PTTL' then return math.floor(r / factor + 0.5) end
  if name == 'EXPIRETIME' then return math.floor(anchor + (r / 1000 - anchor) / factor + 0.5) end
  if name == 'PEXPIRETIME' then return math.floor(anchor * 1000 + (r - anchor * 1000) / factor + 0.5) end
  return r
 end
 local shadow = setmetatable({}, {__index = real})
 shadow.call = function(...) local a = {...}; local name = out(a); return back(name, real.call(unpack(a))) end
 shadow.pcall = function(...) local a = {...}; local name = out(a); return back(name, real.pcall(unpack(a))) end
 return shadow
end)(redis, FACTOR, ANCHOR);
""".split())

# SHA1 of a script as a client computes it -> SHA1 of the script as this process sent it.
_SENT_AS: dict[str, str] = {}


def _name(value) -> bytes:
    if isinstance(value, str):
        value = value.encode()
    return value.upper() if isinstance(value, bytes) else b""


def _bytes(value) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _wall_ms(clock: labtime.Clock, seconds: float) -> int:
    return max(1, math.ceil(seconds * clock.factor * 1000))


def _wall_epoch_ms(clock: labtime.Clock, production_epoch: float) -> int:
    return math.ceil((clock.anchor + (production_epoch - clock.anchor) * clock.factor) * 1000)


def script(clock: labtime.Clock, source) -> bytes:
    """Return a Lua script as a lab process sends it: with the prelude that puts its Redis calls on the lab clock."""
    text = _bytes(source)
    prelude = _PRELUDE.replace("FACTOR", repr(clock.factor)).replace("ANCHOR", repr(clock.anchor)).encode()
    if text.startswith(b"#!"):
        first, newline, rest = text.partition(b"\n")
        sent = first + newline + prelude + b" " + rest
    else:
        sent = prelude + b" " + text
    _SENT_AS[hashlib.sha1(text).hexdigest()] = hashlib.sha1(sent).hexdigest()
    return sent


def _sha(value) -> str:
    """Return the SHA1 under which this process sent the script a client knows by `value`.

    A SHA1 this process never sent a script for may name the script as some
    other client loaded it, off the lab clock: it is sent as one no script
    has, so the server answers NOSCRIPT and the client sends the script
    itself (redis-py's Script and Lock do; production code must, since a
    restarted server has no scripts either).
    """
    known = (value.decode() if isinstance(value, bytes) else str(value)).lower()
    if known in _SENT_AS:
        return _SENT_AS[known]
    if known in _SENT_AS.values():
        return known
    return hashlib.sha1(b"never sent on the lab clock: " + known.encode()).hexdigest()


def redis_args(clock: labtime.Clock, args: tuple) -> tuple:
    """Return a Redis command's arguments with every expiry and script put on the lab clock (see the module)."""
    if not args:
        return args
    if isinstance(args[0], (str, bytes)) and b" " in _bytes(args[0]).strip():
        # redis-py names some commands in one argument ("SCRIPT LOAD"): one word each, as sent.
        args = tuple(_bytes(args[0]).split()) + tuple(args[1:])
    command, args = _name(args[0]), list(args)
    if command in _IN_MILLISECONDS:
        args[0] = _IN_MILLISECONDS[command].decode()
    elif command in _RELATIVE:
        at, unit = _RELATIVE[command]
        args[0] = _RENAMED.get(command, command).decode()
        args[at + 1] = _wall_ms(clock, float(args[at + 1]) * unit)
    elif command in _ABSOLUTE:
        at, unit = _ABSOLUTE[command]
        args[0] = _RENAMED.get(command, command).decode()
        args[at + 1] = _wall_epoch_ms(clock, float(args[at + 1]) * unit)
    elif command in _BLOCKING_LAST or command in _BLOCKING_FIRST:
        at = -1 if command in _BLOCKING_LAST else 1
        seconds = float(args[at])
        if seconds > 0:  # 0 blocks for ever
            args[at] = f"{seconds * clock.factor:.6f}"
    elif command in (b"XREAD", b"XREADGROUP"):
        for index in range(1, len(args) - 1):
            if _name(args[index]) == b"BLOCK" and float(args[index + 1]) > 0:
                args[index + 1] = _wall_ms(clock, float(args[index + 1]) / 1000)
                break
    elif command in (b"SET", b"GETEX"):
        for index in range(2, len(args) - 1):
            option = _name(args[index])
            if option in _OPTIONS:
                value = float(args[index + 1]) * _OPTIONS[option]
                if option in (b"EX", b"PX"):
                    args[index], args[index + 1] = "PX", _wall_ms(clock, value)
                else:
                    args[index], args[index + 1] = "PXAT", _wall_epoch_ms(clock, value)
                break
    elif command in _SCRIPTS and len(args) > 1:
        args[1] = script(clock, args[1])
    elif command in _SHAS and len(args) > 1:
        args[1] = _sha(args[1])
    elif command == b"SCRIPT" and len(args) > 2:
        if _name(args[1]) == b"LOAD":
            args[2] = script(clock, args[2])
        elif _name(args[1]) == b"EXISTS":
            args[2:] = [_sha(sha) for sha in args[2:]]
    return tuple(args)


def _production_reply(clock: labtime.Clock, command: str, value):
    """Convert a TTL, PTTL, EXPIRETIME, PEXPIRETIME or TIME reply from the server's wall clock to production time."""
    if command == "TIME":
        if isinstance(value, (tuple, list)) and len(value) == 2:
            instant = clock.anchor + (int(value[0]) + int(value[1]) / 1e6 - clock.anchor) * clock.speed
            whole = math.floor(instant)
            return type(value)((whole, int((instant - whole) * 1e6))) if isinstance(value, tuple) else [
                whole, int((instant - whole) * 1e6)]
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:  # -1: no expiry, -2: no key
        return value
    if command == "TTL":  # sent as PTTL
        return math.floor(value * clock.speed / 1000 + 0.5)
    if command == "PTTL":
        return math.floor(value * clock.speed + 0.5)
    if command == "EXPIRETIME":  # sent as PEXPIRETIME
        return math.floor(clock.anchor + (value / 1000 - clock.anchor) * clock.speed + 0.5)
    return math.floor(clock.anchor * 1000 + (value - clock.anchor * 1000) * clock.speed + 0.5)


_READ_BACK = ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "TIME")


def _read_back(clock: labtime.Clock, callbacks) -> None:
    """Wrap a client's response callbacks for the replies that carry time (its pipelines share them)."""
    for command in _READ_BACK:
        original = callbacks.get(command)
        if getattr(original, "_lab_clock", False):
            continue

        def converted(response, _original=original, _command=command, **options):
            value = _original(response, **options) if _original is not None else response
            return _production_reply(clock, _command, value)

        converted._lab_clock = True
        callbacks[command] = converted


def _patch_client(module) -> None:
    clock = labtime.installed()
    init = module.Redis.__init__
    if getattr(init, "_lab_clock", False):
        return

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _read_back(clock, self.response_callbacks)

    __init__._lab_clock = True
    module.Redis.__init__ = __init__


def _patch_serializers(module) -> None:
    clock = labtime.installed()
    for name in ("PythonRespSerializer", "HiredisRespSerializer"):
        serializer = getattr(module, name, None)
        if serializer is None or getattr(serializer.pack, "_lab_clock", False):
            continue
        pack = serializer.pack

        def scaled(self, *args, _pack=pack):
            return _pack(self, *redis_args(clock, args))

        scaled._lab_clock = True
        serializer.pack = scaled


def _patch_async_connection(module) -> None:
    """redis.asyncio packs its commands itself, not through the sync serializers."""
    clock = labtime.installed()
    pack = module.AbstractConnection.pack_command
    if getattr(pack, "_lab_clock", False):
        return

    def pack_command(self, *args):
        return pack(self, *redis_args(clock, args))

    pack_command._lab_clock = True
    module.AbstractConnection.pack_command = pack_command


def install() -> None:
    """Put this process's Redis commands (it is on the lab clock already) on the lab clock, as each module arrives."""
    if labtime.installed() is not None:
        afterimport.patch("redis.connection", _patch_serializers)
        afterimport.patch("redis.client", _patch_client)
        afterimport.patch("redis.asyncio.connection", _patch_async_connection)
        afterimport.patch("redis.asyncio.client", _patch_client)
