/* Odometry's kernels (odometry.cl), for the library's device path
 * (odometry_device.c) and the tests that compile them. Private to the
 * library. */
#ifndef PTREG_REG_ODOMETRY_DEVICE_H
#define PTREG_REG_ODOMETRY_DEVICE_H

#include "device/backend.h"

extern const kernel_program odometry_kernels;
/* The -D options it is built with. */
#define ODOMETRY_DEVICE_DEFINES "-DWG=256"

#endif
