"""The device: generated code run where it will live, and its outputs checked against TFLite.

Takes: a build (tinysched.build: host runner or firmware image) and the model. Gives: measurements
(`MeasureResult`: outputs compared byte for byte with TFLite's reference, arena high-water against
the plan, stack, instructions or cycles) from QEMU's stand-ins or a board over its serial link, and
`verify`'s host-runner comparison. The reference interpreter runs in a child process.

    reference.py  TFLite's reference interpreter in a child process; inputs on the planned interface
    verify.py     the host runner's outputs against the reference, byte for byte
    link.py       the serial protocol between tinysched and the harness
    runner.py     QEMU and boards: flashing, running, measuring
"""

from tinysched.exports import lazy_api

_API = {
    "DeviceLink": "link",
    "MeasureResult": "runner",
    "VerifyResult": "verify",
    "measure_image": "runner",
    "random_inputs": "reference",
    "run_reference": "reference",
    "run_reference_many": "reference",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)
