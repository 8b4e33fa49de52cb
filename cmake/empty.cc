// The shared library's own translation unit is empty: every object comes whole from humus_core.
