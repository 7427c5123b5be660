/* ptreg: accelerated point-set registration and 3-D feature extraction.
 * One header per module; this one pulls them all in. */
#ifndef PTREG_H
#define PTREG_H

#include "apt.h"
#include "batch.h"
#include "core.h"
#include "device.h"
#include "emicp.h"
#include "features.h"
#include "global.h"
#include "harris3d.h"
#include "icp.h"
#include "io.h"
#include "lddmm.h"
#include "motif.h"
#include "nn.h"
#include "orientation.h"
#include "pair.h"
#include "synth.h"
#include "synth_apt.h"
#include "tune.h"

#endif
