"""docs/tutorial/01-boot.md: the device model's bring-up (no VM)."""


def generate(r):
    out = r.lesson_sh('docs/tutorial/01-boot.md', 'l01-bringup')
    r.block('l01-bringup', out)
    r.claim('STATUS 0x1 (READY)' in out and 'STATUS 0x3 (READY ENABLED)' in out,
            'the device starts READY and is ENABLED once its admin queue is set up')
