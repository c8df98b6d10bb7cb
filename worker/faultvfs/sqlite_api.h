/*
** The few parts of SQLite's documented C API that the wrapper VFS needs,
** declared here so the package builds with only Go and gcc: the symbols
** themselves come from the SQLite that github.com/mattn/go-sqlite3 compiles
** into the binary. The layouts follow https://sqlite.org/c3ref/vfs.html,
** https://sqlite.org/c3ref/io_methods.html and https://sqlite.org/c3ref/file.html.
** Nothing here includes sqlite3.h, so no declaration can clash with it.
*/
#ifndef IDEMLAB_FAULTVFS_SQLITE_API_H
#define IDEMLAB_FAULTVFS_SQLITE_API_H

typedef long long sqlite3_int64;
typedef struct sqlite3_file sqlite3_file;
typedef struct sqlite3_io_methods sqlite3_io_methods;
typedef struct sqlite3_vfs sqlite3_vfs;
typedef void (*sqlite3_syscall_ptr)(void);

struct sqlite3_file {
  const sqlite3_io_methods *pMethods;
};

struct sqlite3_io_methods {
  int iVersion;
  int (*xClose)(sqlite3_file*);
  int (*xRead)(sqlite3_file*, void*, int iAmt, sqlite3_int64 iOfst);
  int (*xWrite)(sqlite3_file*, const void*, int iAmt, sqlite3_int64 iOfst);
  int (*xTruncate)(sqlite3_file*, sqlite3_int64 size);
  int (*xSync)(sqlite3_file*, int flags);
  int (*xFileSize)(sqlite3_file*, sqlite3_int64 *pSize);
  int (*xLock)(sqlite3_file*, int);
  int (*xUnlock)(sqlite3_file*, int);
  int (*xCheckReservedLock)(sqlite3_file*, int *pResOut);
  int (*xFileControl)(sqlite3_file*, int op, void *pArg);
  int (*xSectorSize)(sqlite3_file*);
  int (*xDeviceCharacteristics)(sqlite3_file*);
  /* version 2 */
  int (*xShmMap)(sqlite3_file*, int iPg, int pgsz, int, void volatile**);
  int (*xShmLock)(sqlite3_file*, int offset, int n, int flags);
  void (*xShmBarrier)(sqlite3_file*);
  int (*xShmUnmap)(sqlite3_file*, int deleteFlag);
  /* version 3 */
  int (*xFetch)(sqlite3_file*, sqlite3_int64 iOfst, int iAmt, void **pp);
  int (*xUnfetch)(sqlite3_file*, sqlite3_int64 iOfst, void *p);
};

struct sqlite3_vfs {
  int iVersion;
  int szOsFile;
  int mxPathname;
  sqlite3_vfs *pNext;
  const char *zName;
  void *pAppData;
  int (*xOpen)(sqlite3_vfs*, const char *zName, sqlite3_file*, int flags, int *pOutFlags);
  int (*xDelete)(sqlite3_vfs*, const char *zName, int syncDir);
  int (*xAccess)(sqlite3_vfs*, const char *zName, int flags, int *pResOut);
  int (*xFullPathname)(sqlite3_vfs*, const char *zName, int nOut, char *zOut);
  void *(*xDlOpen)(sqlite3_vfs*, const char *zFilename);
  void (*xDlError)(sqlite3_vfs*, int nByte, char *zErrMsg);
  void (*(*xDlSym)(sqlite3_vfs*, void*, const char *zSymbol))(void);
  void (*xDlClose)(sqlite3_vfs*, void*);
  int (*xRandomness)(sqlite3_vfs*, int nByte, char *zOut);
  int (*xSleep)(sqlite3_vfs*, int microseconds);
  int (*xCurrentTime)(sqlite3_vfs*, double*);
  int (*xGetLastError)(sqlite3_vfs*, int, char *);
  /* version 2 */
  int (*xCurrentTimeInt64)(sqlite3_vfs*, sqlite3_int64*);
  /* version 3 */
  int (*xSetSystemCall)(sqlite3_vfs*, const char *zName, sqlite3_syscall_ptr);
  sqlite3_syscall_ptr (*xGetSystemCall)(sqlite3_vfs*, const char *zName);
  const char *(*xNextSystemCall)(sqlite3_vfs*, const char *zName);
};

sqlite3_vfs *sqlite3_vfs_find(const char *zVfsName);
int sqlite3_vfs_register(sqlite3_vfs *pVfs, int makeDflt);

#define SQLITE_OK                 0
#define SQLITE_ERROR              1
#define SQLITE_IOERR              10
#define SQLITE_CANTOPEN           14
#define SQLITE_IOERR_FSYNC        (SQLITE_IOERR | (4<<8))
#define SQLITE_IOERR_DELETE       (SQLITE_IOERR | (10<<8))
#define SQLITE_IOERR_WRITE        (SQLITE_IOERR | (3<<8))
#define SQLITE_IOERR_UNLOCK       (SQLITE_IOERR | (8<<8))
#define SQLITE_SHM_UNLOCK         1
#define SQLITE_ACCESS_EXISTS      0
#define SQLITE_OPEN_CREATE        0x00000004
#define SQLITE_OPEN_MAIN_DB       0x00000100
#define SQLITE_OPEN_MAIN_JOURNAL  0x00000800
#define SQLITE_OPEN_SUPER_JOURNAL 0x00004000
#define SQLITE_OPEN_WAL           0x00080000

/* The wrapper's own functions, defined in faultvfs.c. */
int idemlab_flt_register(const char *zName);
void idemlab_flt_arm(int on);

#endif
