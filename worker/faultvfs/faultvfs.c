/*
** A thin wrapper over the default VFS. Every method forwards to the base VFS
** or the base file; xOpen, xSync, xClose and xDelete also tell the Go side,
** which keeps the durable state on disk. Writes and truncations tell it the
** range they touch, so a sync copies only what changed, and every lock
** release first publishes those ranges to the other processes (see
** faultvfs's package doc). Reads never leave C.
*/
#include <string.h>
#include "sqlite_api.h"
#include "_cgo_export.h"

typedef struct FltFile {
  sqlite3_file base;   /* pMethods points at one of the fltIo tables */
  long long handle;    /* the Go side's id for a tracked file, else 0 */
  sqlite3_file *real;  /* the base VFS's file, allocated right after this */
} FltFile;

static sqlite3_vfs *fltBase;
static sqlite3_vfs fltVfs;

#define REAL(f) (((FltFile*)(f))->real)
#define RM(f) (REAL(f)->pMethods)

/* fltNoted is set when a write or truncation noted a range that has not
** been published yet. A lock release calls into Go only then: a WAL
** transaction releases shared-memory locks several times, and a call from
** C into Go costs more than the commit's own work. It is cleared before
** publishing, so a range noted meanwhile sets it again for the next
** release. */
static int fltNoted;

static int fltPublish(void){
  if( !__atomic_load_n(&fltNoted, __ATOMIC_ACQUIRE) ) return 0;
  __atomic_store_n(&fltNoted, 0, __ATOMIC_RELEASE);
  if( idemlabFltPublish()!=0 ){
    __atomic_store_n(&fltNoted, 1, __ATOMIC_RELEASE);
    return 1;
  }
  return 0;
}

static int fltClose(sqlite3_file *f){
  FltFile *p = (FltFile*)f;
  int rc;
  if( p->handle>0 && fltPublish()!=0 ) return SQLITE_IOERR_WRITE;
  rc = RM(f)->xClose(REAL(f));
  if( p->handle>0 ){
    idemlabFltClose(p->handle);
    p->handle = 0;
  }
  return rc;
}
static int fltRead(sqlite3_file *f, void *b, int n, sqlite3_int64 o){
  return RM(f)->xRead(REAL(f), b, n, o);
}
/* The range is noted before the write, so a process killed in between
** leaves at worst a range that did not change. */
static int fltWrite(sqlite3_file *f, const void *b, int n, sqlite3_int64 o){
  FltFile *p = (FltFile*)f;
  if( p->handle>0 ){
    idemlabFltWrite(p->handle, o, o+n);
    __atomic_store_n(&fltNoted, 1, __ATOMIC_RELEASE);
  }
  return RM(f)->xWrite(REAL(f), b, n, o);
}
/* A truncation changes everything from the new size on: bytes written
** there later follow a hole of zeros. -1 is "to the end". */
static int fltTruncate(sqlite3_file *f, sqlite3_int64 size){
  FltFile *p = (FltFile*)f;
  if( p->handle>0 ){
    idemlabFltWrite(p->handle, size, -1);
    __atomic_store_n(&fltNoted, 1, __ATOMIC_RELEASE);
  }
  return RM(f)->xTruncate(REAL(f), size);
}
/* fltCutArmed is set when the process must stop at its N-th sync (see
** ArmSyncCut); only then does every sync call into Go twice more, just
** before the fsync and just after it is recorded. */
static int fltCutArmed;

void idemlab_flt_arm(int on){
  __atomic_store_n(&fltCutArmed, on, __ATOMIC_RELEASE);
}

static int fltSync(sqlite3_file *f, int flags){
  FltFile *p = (FltFile*)f;
  int armed = p->handle>0 && __atomic_load_n(&fltCutArmed, __ATOMIC_ACQUIRE);
  int rc;
  if( armed ) idemlabFltSyncPoint(p->handle, 0);
  rc = RM(f)->xSync(REAL(f), flags);
  if( rc==SQLITE_OK && p->handle>0 && idemlabFltSync(p->handle)!=0 ){
    rc = SQLITE_IOERR_FSYNC;
  }
  if( rc==SQLITE_OK && armed ) idemlabFltSyncPoint(p->handle, 1);
  return rc;
}
static int fltFileSize(sqlite3_file *f, sqlite3_int64 *pSize){
  return RM(f)->xFileSize(REAL(f), pSize);
}
static int fltLock(sqlite3_file *f, int l){ return RM(f)->xLock(REAL(f), l); }
/* Published before the release, so no process can take the lock and sync
** the file without seeing what this one wrote under it. */
static int fltUnlock(sqlite3_file *f, int l){
  if( fltPublish()!=0 ) return SQLITE_IOERR_UNLOCK;
  return RM(f)->xUnlock(REAL(f), l);
}
static int fltCheckReservedLock(sqlite3_file *f, int *pRes){
  return RM(f)->xCheckReservedLock(REAL(f), pRes);
}
static int fltFileControl(sqlite3_file *f, int op, void *pArg){
  return RM(f)->xFileControl(REAL(f), op, pArg);
}
static int fltSectorSize(sqlite3_file *f){ return RM(f)->xSectorSize(REAL(f)); }
static int fltDeviceCharacteristics(sqlite3_file *f){
  return RM(f)->xDeviceCharacteristics(REAL(f));
}
static int fltShmMap(sqlite3_file *f, int iPg, int pgsz, int bExtend, void volatile **pp){
  return RM(f)->xShmMap(REAL(f), iPg, pgsz, bExtend, pp);
}
static int fltShmLock(sqlite3_file *f, int offset, int n, int flags){
  if( (flags & SQLITE_SHM_UNLOCK)!=0 && fltPublish()!=0 ) return SQLITE_IOERR_UNLOCK;
  return RM(f)->xShmLock(REAL(f), offset, n, flags);
}
static void fltShmBarrier(sqlite3_file *f){ RM(f)->xShmBarrier(REAL(f)); }
static int fltShmUnmap(sqlite3_file *f, int deleteFlag){
  return RM(f)->xShmUnmap(REAL(f), deleteFlag);
}
static int fltFetch(sqlite3_file *f, sqlite3_int64 o, int n, void **pp){
  return RM(f)->xFetch(REAL(f), o, n, pp);
}
static int fltUnfetch(sqlite3_file *f, sqlite3_int64 o, void *p){
  return RM(f)->xUnfetch(REAL(f), o, p);
}

/*
** One table per io_methods version, so SQLite never calls a method the base
** file does not have: it checks iVersion before xShm* and xFetch.
*/
#define FLT_IO(v) { v, fltClose, fltRead, fltWrite, fltTruncate, fltSync, \
  fltFileSize, fltLock, fltUnlock, fltCheckReservedLock, fltFileControl, \
  fltSectorSize, fltDeviceCharacteristics, fltShmMap, fltShmLock, \
  fltShmBarrier, fltShmUnmap, fltFetch, fltUnfetch }
static const sqlite3_io_methods fltIo1 = FLT_IO(1);
static const sqlite3_io_methods fltIo2 = FLT_IO(2);
static const sqlite3_io_methods fltIo3 = FLT_IO(3);

static const sqlite3_io_methods *fltIoFor(const sqlite3_io_methods *real){
  if( real==0 ) return 0;
  if( real->iVersion>=3 ) return &fltIo3;
  if( real->iVersion==2 ) return &fltIo2;
  return &fltIo1;
}

#define FLT_TRACKED (SQLITE_OPEN_MAIN_DB|SQLITE_OPEN_MAIN_JOURNAL \
  |SQLITE_OPEN_SUPER_JOURNAL|SQLITE_OPEN_WAL)

static int fltOpen(sqlite3_vfs *v, const char *zName, sqlite3_file *f, int flags, int *pOut){
  FltFile *p = (FltFile*)f;
  int tracked = zName!=0 && (flags & FLT_TRACKED)!=0;
  int exists = 0;
  int rc;
  long long h;
  (void)v;
  memset(p, 0, sizeof(*p));
  p->real = (sqlite3_file*)&p[1];
  if( tracked ){
    rc = fltBase->xAccess(fltBase, zName, SQLITE_ACCESS_EXISTS, &exists);
    if( rc!=SQLITE_OK ) return rc;
  }
  rc = fltBase->xOpen(fltBase, zName, p->real, flags, pOut);
  /* SQLite reads pMethods even when xOpen fails, and calls xClose if set. */
  p->base.pMethods = fltIoFor(p->real->pMethods);
  if( rc!=SQLITE_OK || !tracked ) return rc;
  h = idemlabFltOpen((char*)zName, flags, exists);
  if( h<0 ){
    p->real->pMethods->xClose(p->real);
    p->base.pMethods = 0;
    return SQLITE_CANTOPEN;
  }
  p->handle = h;
  return rc;
}

static int fltDelete(sqlite3_vfs *v, const char *zName, int dirSync){
  int rc;
  (void)v;
  if( idemlabFltDelete((char*)zName, dirSync, 0)!=0 ) return SQLITE_IOERR_DELETE;
  rc = fltBase->xDelete(fltBase, zName, dirSync);
  if( rc==SQLITE_OK && idemlabFltDelete((char*)zName, dirSync, 1)!=0 ){
    rc = SQLITE_IOERR_DELETE;
  }
  return rc;
}

static int fltAccess(sqlite3_vfs *v, const char *z, int flags, int *pRes){
  (void)v; return fltBase->xAccess(fltBase, z, flags, pRes);
}
static int fltFullPathname(sqlite3_vfs *v, const char *z, int n, char *out){
  (void)v; return fltBase->xFullPathname(fltBase, z, n, out);
}
static void *fltDlOpen(sqlite3_vfs *v, const char *z){
  (void)v; return fltBase->xDlOpen(fltBase, z);
}
static void fltDlError(sqlite3_vfs *v, int n, char *z){
  (void)v; fltBase->xDlError(fltBase, n, z);
}
static void (*fltDlSym(sqlite3_vfs *v, void *h, const char *z))(void){
  (void)v; return fltBase->xDlSym(fltBase, h, z);
}
static void fltDlClose(sqlite3_vfs *v, void *h){
  (void)v; fltBase->xDlClose(fltBase, h);
}
static int fltRandomness(sqlite3_vfs *v, int n, char *out){
  (void)v; return fltBase->xRandomness(fltBase, n, out);
}
static int fltSleep(sqlite3_vfs *v, int us){
  (void)v; return fltBase->xSleep(fltBase, us);
}
static int fltCurrentTime(sqlite3_vfs *v, double *t){
  (void)v; return fltBase->xCurrentTime(fltBase, t);
}
static int fltGetLastError(sqlite3_vfs *v, int n, char *z){
  (void)v; return fltBase->xGetLastError(fltBase, n, z);
}
static int fltCurrentTimeInt64(sqlite3_vfs *v, sqlite3_int64 *t){
  (void)v; return fltBase->xCurrentTimeInt64(fltBase, t);
}
static int fltSetSystemCall(sqlite3_vfs *v, const char *z, sqlite3_syscall_ptr fn){
  (void)v; return fltBase->xSetSystemCall(fltBase, z, fn);
}
static sqlite3_syscall_ptr fltGetSystemCall(sqlite3_vfs *v, const char *z){
  (void)v; return fltBase->xGetSystemCall(fltBase, z);
}
static const char *fltNextSystemCall(sqlite3_vfs *v, const char *z){
  (void)v; return fltBase->xNextSystemCall(fltBase, z);
}

/*
** Registers the wrapper under zName over the current default VFS. zName must
** outlive the process. The caller runs this once.
*/
int idemlab_flt_register(const char *zName){
  fltBase = sqlite3_vfs_find(0);
  if( fltBase==0 ) return SQLITE_ERROR;
  fltVfs.iVersion = fltBase->iVersion<3 ? fltBase->iVersion : 3;
  fltVfs.szOsFile = (int)sizeof(FltFile) + fltBase->szOsFile;
  fltVfs.mxPathname = fltBase->mxPathname;
  fltVfs.zName = zName;
  fltVfs.xOpen = fltOpen;
  fltVfs.xDelete = fltDelete;
  fltVfs.xAccess = fltAccess;
  fltVfs.xFullPathname = fltFullPathname;
  fltVfs.xDlOpen = fltDlOpen;
  fltVfs.xDlError = fltDlError;
  fltVfs.xDlSym = fltDlSym;
  fltVfs.xDlClose = fltDlClose;
  fltVfs.xRandomness = fltRandomness;
  fltVfs.xSleep = fltSleep;
  fltVfs.xCurrentTime = fltCurrentTime;
  fltVfs.xGetLastError = fltGetLastError;
  if( fltVfs.iVersion>=2 ) fltVfs.xCurrentTimeInt64 = fltCurrentTimeInt64;
  if( fltVfs.iVersion>=3 ){
    fltVfs.xSetSystemCall = fltSetSystemCall;
    fltVfs.xGetSystemCall = fltGetSystemCall;
    fltVfs.xNextSystemCall = fltNextSystemCall;
  }
  return sqlite3_vfs_register(&fltVfs, 0);
}
