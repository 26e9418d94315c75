package RRL::Test::Logs;

# The checks every test file ends with, as methods of its RRL::Test (a
# parent class of it; done_testing runs them after stopping every nginx):
# no [alert], [crit] or [emerg] in any error.log, no sanitizer report or
# worker crash there, and no sanitizer report file (ASAN_OPTIONS' or
# UBSAN_OPTIONS' log_path). An instance's ignore_log() patterns are left
# out of the first two.

use strict;
use warnings;

use Test::More ();

use RRL::Test::Env qw(read_file);

# the lines of an instance's error.log matching $re, less its ignore_log()s
sub _bad_lines {
    my ($inst, $re) = @_;
    my @ignore = @{ $inst->{ignore_log} || [] };
    return grep { my $l = $_; !grep { $l =~ $_ } @ignore }
        grep { $_ =~ $re } $inst->log_lines;
}

sub check_alerts {
    my ($self) = @_;
    for my $inst (@{ $self->{nginx} }) {
        my @bad = _bad_lines($inst, qr/\[(alert|crit|emerg)\]/);
        Test::More::ok(!@bad,
            "nginx$inst->{index}: no alert, crit or emerg in error.log")
            or Test::More::diag(join "\n", @bad);
    }
}

# check_error_logs: stops every nginx and asserts that no error.log has a
# sanitizer report or a worker crash (sanitizer reports of nginx workers
# may land in error.log, their stderr, rather than in ASAN_OPTIONS'
# log_path; a worker that died may be logged only at [notice]).
# done_testing calls it, unless the file did earlier.

sub check_error_logs {
    my ($self) = @_;

    $self->{checked_error_logs} = 1;
    $_->stop for @{ $self->{nginx} };

    for my $inst (@{ $self->{nginx} }) {
        my @bad = _bad_lines($inst, qr/AddressSanitizer|LeakSanitizer|runtime error:|exited on signal|exited with code [1-9]/);
        Test::More::ok(!@bad, "nginx$inst->{index}: no sanitizer report or "
            . "crash in error.log")
            or Test::More::diag(join "\n", @bad[0 .. ($#bad < 19 ? $#bad : 19)]);
    }
}

# under ASan/UBSan (scripts/test.sh with RRL_ASAN=1) reports go to files
sub check_sanitizer_reports {
    my ($self) = @_;
    my @reports = map { /log_path=([^:]+)/ ? glob("$1.*") : () }
        grep { defined } @ENV{qw(ASAN_OPTIONS UBSAN_OPTIONS)};
    if (grep { defined } @ENV{qw(ASAN_OPTIONS UBSAN_OPTIONS)}) {
        Test::More::ok(!@reports, 'no sanitizer reports')
            or Test::More::diag(join '', map { read_file($_) } @reports);
    }
}

1;
