// The connection (`MotionClient`, `Subscription`, `LineConnection`) lives in `MotionClientCore`, which
// imports FoundationEssentials only, so that motionctl links no ICU; a program that imports
// `MotionClient` gets it with the CoreMotion-shaped API here.
@_exported import MotionClientCore
