"""Messages of a fixed layout serialized once and patched in place.

A state topic's message keeps its layout from one publish to the next: the same frame ids and
joint names, arrays of the same lengths; only the stamp and the numbers change. Filling the
message object field by field and letting rclpy convert and serialize it cost the simulator
about as much per publish period as ten physics steps. A :class:`WireTemplate` holds the
message's serialized bytes -- made by rclpy's own serializer, so the wire format is the
middleware's (XCDR1, little-endian: checked) -- and the byte offsets of its numeric fields,
found by serializing the message with unique sentinel values in them. :meth:`WireTemplate.pack`
writes new values at those offsets; the publisher sends the bytes as they are
(``Publisher.publish(bytes)``, rclpy's raw publish).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.serialization import serialize_message

#: XCDR1 encapsulation header of a little-endian plain CDR payload.
_CDR_LE = b'\x00\x01'


def _set_path(msg: object, path: str, value: object) -> None:
    """``msg.<path> = value``; a numeric part of ``path`` indexes a sequence field."""
    *parents, name = path.split('.')
    for part in parents:
        msg = msg[int(part)] if part.isdigit() else getattr(msg, part)  # type: ignore[index]
    setattr(msg, name, value)


class WireTemplate:
    """Serialized bytes of ``msg`` whose named numeric fields are overwritten in place.

    Parameters
    ----------
    msg : ROS message
        The message with its constant fields set (frame ids, names, array lengths given by
        ``fields``); its numeric fields named in ``fields`` are overwritten here.
    fields : dict of str to (kind, paths)
        Block name -> ``('time', (path,))`` a ``builtin_interfaces/Time`` field;
        ``('f64', paths)`` float64 fields (scalar paths, in the order :meth:`pack` takes
        their values; they must lie back to back in the payload, as a struct's do); or
        ``('f64[]', (path, n))`` a float64 sequence of ``n`` values.

    Raises
    ------
    ValueError
        When the payload is not little-endian CDR, or a block's fields cannot be located
        (not back to back, or a sentinel found more than once).
    """

    def __init__(self, msg: object, fields: dict[str, tuple[str, Sequence]]) -> None:
        self.msg_type = type(msg)
        sentinels: dict[str, list[bytes]] = {}
        self._formats: dict[str, struct.Struct] = {}
        serial = 0x5F3A0000
        for name, (kind, paths) in fields.items():
            if kind == 'time':
                sec, nsec = serial + 1, serial + 2
                serial += 2
                _set_path(msg, paths[0], Time(sec=sec, nanosec=nsec))
                sentinels[name] = [struct.pack('<iI', sec, nsec)]
                self._formats[name] = struct.Struct('<iI')
                continue
            count = int(paths[1]) if kind == 'f64[]' else len(paths)
            values = [float(np.ldexp(1.0 + (serial + k) * 2.0**-40, -900)) for k in range(count)]
            serial += count
            if kind == 'f64[]':
                _set_path(msg, paths[0], values)
            elif kind == 'f64':
                for path, value in zip(paths, values, strict=True):
                    _set_path(msg, path, value)
            else:
                raise ValueError(f'field block {name!r}: unknown kind {kind!r}')
            sentinels[name] = [struct.pack('<d', v) for v in values]
            self._formats[name] = struct.Struct(f'<{count}d')
        payload = serialize_message(msg)
        if payload[:2] != _CDR_LE:
            raise ValueError(
                f'{self.msg_type.__name__}: expected a little-endian CDR payload, got the '
                f'encapsulation {payload[:4]!r}'
            )
        self._offsets: dict[str, int] = {}
        for name, parts in sentinels.items():
            if not parts:  # an empty sequence: nothing to write
                self._offsets[name] = 0
                continue
            starts = []
            for part in parts:
                at = payload.find(part)
                if at < 0 or payload.find(part, at + 1) >= 0:
                    raise ValueError(f'{self.msg_type.__name__}.{name}: field not located')
                starts.append(at)
            step = len(parts[0])
            if starts != [starts[0] + step * k for k in range(len(starts))]:
                raise ValueError(f'{self.msg_type.__name__}.{name}: fields not back to back')
            self._offsets[name] = starts[0]
        self._buffer = bytearray(payload)

    def pack(self, name: str, *values: float) -> None:
        """Write the block ``name``'s values (``sec, nanosec`` for a time).

        Parameters
        ----------
        name : str
            The block's name.
        *values : float or int
            Its fields in order.
        """
        self._formats[name].pack_into(self._buffer, self._offsets[name], *values)

    def pack_arrays(self, name: str, *arrays: np.ndarray) -> None:
        """Write the float64 block ``name`` from arrays whose lengths add up to its own (the
        arrays one after the other).

        Parameters
        ----------
        name : str
            A float64 block.
        *arrays : (k_i,) ndarray
            Concatenated, ``sum k_i`` the block's length; units those of the message field.

        Raises
        ------
        ------
        ValueError
            Lengths that do not add up to the block's.
        """
        data = b''.join(np.ascontiguousarray(a, dtype='<f8').tobytes() for a in arrays)
        size = self._formats[name].size
        if len(data) != size:
            raise ValueError(
                f'{self.msg_type.__name__}.{name}: expected {size // 8} values, got '
                f'{len(data) // 8}'
            )
        at = self._offsets[name]
        self._buffer[at : at + size] = data

    def payload(self) -> bytes:
        """The serialized message as it stands (what ``Publisher.publish`` sends raw).

        Returns
        -------
        bytes
        """
        return bytes(self._buffer)
