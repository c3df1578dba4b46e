// The part of fs-native-extensions (prebuilt native addon, no types of its own) that the data directory's lock uses.
declare module 'fs-native-extensions' {
  /**
   * An exclusive lock on the open file `fd`, without waiting: `fcntl(F_OFD_SETLK)` on Linux, `flock` on macOS. False
   * when another open file description holds it. The kernel releases it when the last descriptor sharing this one
   * (a child's inherited copy included) closes.
   */
  export function tryLock(fd: number): boolean
}
