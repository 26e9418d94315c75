package RRL::Monitor;

# redis-cli MONITOR into a file of the test's directory, for the tests
# that check the arguments the module sends to Redis (the cost fields of
# a lease's or a settlement's EVALSHA):
#
#   my $m = RRL::Monitor->start($t);  # returns once MONITOR is on
#   ...requests...
#   my @fields = $m->stop(qr/"(\d+:\d+:\d+:\d+)"/);
#
# stop() returns every match of the pattern in the EVALSHA lines, in
# order. A monitor not stopped is stopped with $t's cleanups.

use strict;
use warnings;

use POSIX ();
use Time::HiRes qw(time sleep);

use RRL::Test;

sub start {
    my ($class, $t) = @_;

    my $file = $t->testdir . '/monitor' . int(rand(1e9)) . '.txt';
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', $file or POSIX::_exit(1);
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec RRL::Test::redis_cli_binary(),
            '-h', '127.0.0.1', '-p', $t->redis_port, 'MONITOR'; }
        POSIX::_exit(127);
    }
    my $self = bless { pid => $pid, file => $file }, $class;
    $t->add_cleanup(sub { $self->kill });

    # MONITOR answers OK once it is on
    my $deadline = time + 5;
    sleep 0.02 while time < $deadline
        && RRL::Test::read_file($file) !~ /OK/;
    return $self;
}

sub stop {
    my ($self, $pattern) = @_;

    # the last replies' commands reach the file
    sleep 0.1;
    $self->kill;

    my @fields;
    for (split /\n/, RRL::Test::read_file($self->{file})) {
        next unless /"EVALSHA"/i;
        push @fields, /$pattern/g;
    }
    return @fields;
}

sub kill {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    kill 'TERM', $pid;
    waitpid($pid, 0);
}

1;
