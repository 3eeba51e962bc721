"""``python -m cer.worker CTRL_IN CTRL_OUT``: how the supervisor starts a worker."""

from cer.worker.main import main

main()
