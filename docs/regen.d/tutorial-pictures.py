"""docs/tutorial/img/*.svg drawn by docs/tutorial/mkpictures (lessons 0, 1, 2, 3, 5, 7, 8)."""
import os
import sys


def generate(r):
    out = os.path.join(r.out_root, 'docs', 'tutorial', 'img')
    os.makedirs(out, exist_ok=True)
    env = {}
    if os.environ.get('QRNIC_BUILD_DIR'):
        env['QRNIC_BUILD_DIR'] = os.path.abspath(os.environ['QRNIC_BUILD_DIR'])
    made = r.sh(f'{sys.executable} docs/tutorial/mkpictures -o "$REGEN_OUT"',
                env=dict(env, REGEN_OUT=out)).split()
    for path in made:
        r.drawn(os.path.relpath(path, r.out_root))
