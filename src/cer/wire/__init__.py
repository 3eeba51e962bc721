"""What crosses the pipe between the supervisor and the implementation's side: frames on
raw file descriptors, plain data in its typed encoding, the worker's messages and the
read-only case an implementation receives. Both sides import it; it imports neither."""
