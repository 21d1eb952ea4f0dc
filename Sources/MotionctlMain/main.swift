import MotionCtlCommands

// motionctl on its own (the development build and the tests that run it); installed, motionctl is
// motiond called by that name (Sources/motiond/Motiond.swift), which runs the same entry.
Motionctl.mainFromSynchronousContext()
