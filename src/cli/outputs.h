/* Output options: what each writes (cli_option.writes) and the check that
 * every output a command was given can be written, before it does any work
 * (a bad path or format is exit 2 at once, not after a long computation). */
#ifndef PTREG_CLI_OUTPUTS_H
#define PTREG_CLI_OUTPUTS_H

/* cli_option.writes: the endings the option writes, blank-separated, case
 * ignored ("nii.gz" may have a dot), or CLI_WRITES_FOLDER for a folder the
 * command fills (made when missing: its parent must exist). */
#define CLI_WRITES_CLOUD "ply pcd xyz txt csv pts las pos"
#define CLI_WRITES_TRANSFORM "txt json"
#define CLI_WRITES_SVG "svg"
#define CLI_WRITES_HTML "html"
#define CLI_WRITES_FOLDER "/"
/* Before the endings: the option writes line by line, so a FIFO or a
 * device (/dev/null) is a target too, whatever its name ("| txt tum"). */
#define CLI_WRITES_LIVE "| "

struct cli_args;
/* For each output option given: its extension is one the option writes,
 * and its folder exists and is writable (a symlink judged by the file it
 * names). Prints what is wrong, listing the formats the option writes,
 * and returns EXIT_USAGE; else EXIT_OK. */
int cli_check_outputs(const struct cli_args *args);
/* Removes an output a failed run wrote in place (not through the atomic
 * file): the file a symlink names, so the link stays and no partial file
 * is left behind it. */
void cli_remove_output(const char *path);
/* Whether path ends in "." + one of the endings of `writes` (case ignored). */
int cli_writes_extension(const char *writes, const char *path);

#endif
