"""A job whose one stage ends before the job does: ``with stage("work")`` for 0.3 s, then
1.5 s outside any stage."""

import time

from headroom_memory import stage

with stage("work"):
    time.sleep(0.3)
time.sleep(1.5)
